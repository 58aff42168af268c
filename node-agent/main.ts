/**
 * Entry of the shipped agent bundle (`npm run build` → .build/node-agent/agent.mjs): the
 * `gpu-reflex agent` command alone, as plain JavaScript. An image runs this rather than the CLI
 * under tsx, whose loader thread costs ~35 MiB of RSS (see docs/benchmarks.md).
 *   node agent.mjs [--once] [--dry-run]
 */
import { processIo } from '../events/cli-kit/command.ts';
import { agentCommand } from './cli/agent.ts';

const args = process.argv.slice(2);
if (args[0] === 'agent') args.shift();
process.exitCode = await agentCommand.run(args, processIo);
