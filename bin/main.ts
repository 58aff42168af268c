import { readFileSync } from 'node:fs';
import { processIo, type CliIo } from '../events/cli-kit/command.ts';
import { commands, type Entry } from './commands.ts';
import { debugText, describeFailure } from './errors.ts';

export { commands } from './commands.ts';

function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}

function overview(): string {
  const width = Math.max(...commands.map((c) => c.path.join(' ').length));
  return [
    'gpu-reflex: reflexes for Kubernetes GPU fleets.',
    '',
    'Usage: gpu-reflex <command> [options]',
    '',
    'Commands:',
    ...commands.map((c) => `  ${c.path.join(' ').padEnd(width)}  ${c.summary}`),
    '',
    'Options:',
    '  --help, -h     help for any command (gpu-reflex events validate --help)',
    '  --version, -v  print the version',
    '  --debug        on an unexpected error, print its stack (also GPU_REFLEX_DEBUG=1)',
    '',
    'Exit codes: 0 done, 1 failed (one line on stderr says why), 2 bad usage.',
  ].join('\n');
}

function groupHelp(name: string, group: Entry[]): string {
  const width = Math.max(...group.map((c) => c.path.join(' ').length));
  return [
    `Usage: gpu-reflex ${name} <command> [options]`,
    '',
    'Commands:',
    ...group.map((c) => `  ${c.path.join(' ').padEnd(width)}  ${c.summary}`),
    '',
    `Each has --help: gpu-reflex ${group[0]!.path.join(' ')} --help`,
  ].join('\n');
}

/** Longest command path that prefixes argv wins, so `events` alone lists its subcommands. */
function find(argv: string[]): { entry: Entry; rest: string[] } | undefined {
  let best: Entry | undefined;
  for (const c of commands) {
    if (c.path.every((w, i) => argv[i] === w) && (!best || c.path.length > best.path.length)) best = c;
  }
  return best ? { entry: best, rest: argv.slice(best.path.length) } : undefined;
}

/** `--debug` may stand anywhere before `--`; it is the dispatcher's, not the command's. */
function takeDebug(argv: string[]): { argv: string[]; debug: boolean } {
  const end = argv.indexOf('--');
  const head = end === -1 ? argv : argv.slice(0, end);
  const tail = end === -1 ? [] : argv.slice(end);
  const rest = head.filter((a) => a !== '--debug');
  return { argv: [...rest, ...tail], debug: rest.length !== head.length };
}

function debugFromEnv(env: NodeJS.ProcessEnv): boolean {
  const v = env.GPU_REFLEX_DEBUG?.toLowerCase();
  return v === '1' || v === 'true' || v === 'yes';
}

/** Prints one line for `err` (the stack too in debug) and returns the exit code. */
export function reportFailure(err: unknown, name: string, io: CliIo, debug: boolean): number {
  const f = describeFailure(err);
  const hint = f.exitCode === 2 && name !== 'gpu-reflex' ? ` (see ${name} --help)` : '';
  io.err(
    `${name}: ${debug && !f.expected ? f.message.replace(/ \(run with --debug for details\)$/, '') : f.message}${hint}`,
  );
  if (debug) io.err(debugText(err));
  return f.exitCode;
}

/**
 * Runs one command line and returns its exit code. Every failure a command throws ends here and
 * is reported by reportFailure: one line on stderr, never a stack unless --debug.
 */
export async function main(
  rawArgv: string[],
  io: CliIo = processIo,
  env: NodeJS.ProcessEnv = process.env,
): Promise<number> {
  const { argv, debug: debugFlag } = takeDebug(rawArgv);
  const debug = debugFlag || debugFromEnv(env);
  const first = argv[0];
  if (first === undefined || first === '--help' || first === '-h' || first === 'help') {
    io.out(overview());
    return first === undefined ? 2 : 0;
  }
  if (first === '--version' || first === '-v') {
    io.out(version());
    return 0;
  }
  const hit = find(argv);
  if (!hit) {
    const group = commands.filter((c) => c.path[0] === first);
    if (group.length > 0) {
      if (argv[1] === '--help' || argv[1] === '-h') {
        io.out(groupHelp(first, group));
        return 0;
      }
      const what = argv[1] === undefined ? 'name a command' : `unknown command "${argv.slice(1).join(' ')}"`;
      io.err(
        `gpu-reflex ${first}: ${what}; choose one of: ${group.map((c) => c.path.slice(1).join(' ')).join(', ')} (see ` +
          `gpu-reflex ${first} --help)`,
      );
      return 2;
    }
    io.err(`gpu-reflex: unknown command "${argv.join(' ')}". Run gpu-reflex --help for the list.`);
    return 2;
  }
  const name = `gpu-reflex ${hit.entry.path.join(' ')}`;
  try {
    const command = await hit.entry.load();
    if (hit.rest.includes('--help') || hit.rest.includes('-h')) {
      io.out(command.help);
      return 0;
    }
    return await command.run(hit.rest, io);
  } catch (err) {
    return reportFailure(err, name, io, debug);
  }
}

/**
 * `gpu-reflex xid scan | head -2`: a reader that went away is not an error worth a stack trace.
 * Called by the CLI's own entry (runProcess), never on import: the modules the commands import
 * (the node agent's shipped entry among them) must not have their process's stdout rewired.
 */
function exitQuietlyOnEpipe(): void {
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(0);
    throw err;
  });
}

/**
 * The process entry (bin/gpu-reflex.js): runs main, and reports what escapes it (an error thrown
 * later by a server, a stray rejection) the same way, so no path prints a bare stack.
 */
export async function runProcess(argv: string[]): Promise<void> {
  exitQuietlyOnEpipe();
  const { debug } = takeDebug(argv);
  const escaped = (err: unknown) => {
    const code = reportFailure(err, 'gpu-reflex', processIo, debug || debugFromEnv(process.env));
    process.exit(code);
  };
  // An unhandled rejection reaches this too (Node's default --unhandled-rejections=throw).
  process.on('uncaughtException', escaped);
  process.exitCode = await main(argv);
}
