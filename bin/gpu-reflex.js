#!/usr/bin/env node
// The one CLI entry. It only dispatches: TypeScript runs as-is through tsx, so `npx gpu-reflex`
// works right after `npm ci` with no build step.
import { register } from 'tsx/esm/api';

register();
const { runProcess } = await import('./main.ts');
await runProcess(process.argv.slice(2));
