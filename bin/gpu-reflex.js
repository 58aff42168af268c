#!/usr/bin/env node
// The one CLI entry. It only dispatches: TypeScript runs as-is through tsx, so `npx gpu-reflex`
// works right after `npm ci` with no build step.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('./main.ts');
process.exitCode = await main(process.argv.slice(2));
