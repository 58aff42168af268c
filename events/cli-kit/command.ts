/**
 * The CLI kit every command shares, wherever it lives (`node-agent/cli/`, a function's folder,
 * `infra/local/`, `events/`): what a command is, its two error kinds, its output, its wait for a
 * signal. It sits in `events/` for the reason the clock does (events/clock.ts): that folder is the
 * one the agent, the functions and the simulators may all import, and nothing below bin/ may import
 * bin/ (test/contract/layers.test.ts). bin/main.ts dispatches to the commands and phrases their
 * failures (bin/errors.ts). Importing this file has no side effect: the stdout hook for EPIPE is
 * bin/main.ts's, run by the CLI's own entry only.
 */

/**
 * What every CLI command is: a path of words (`events validate`), a one-line summary, the full
 * help text, and a run function that returns the exit code. Output goes through `io` so tests can
 * capture it without spawning a process.
 */
export interface CliIo {
  out(line: string): void;
  err(line: string): void;
  /** Reads a whole file, or standard input for `-`. */
  readInput?(path: string): Promise<string>;
}

export interface Command {
  path: readonly string[];
  summary: string;
  /** Printed by `--help`: usage line, options, examples. */
  help: string;
  run(args: string[], io: CliIo): Promise<number>;
}

/** Bad usage (unknown option, missing argument, bad value): one line and exit code 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/**
 * Input the user can fix (a missing, unreadable or malformed file, an unwritable path): one
 * line naming the file and the problem, exit code 1. `cause` keeps the underlying error for --debug.
 */
export class InputError extends Error {
  override name = 'InputError';
}

export const processIo: CliIo = {
  out: (line) => process.stdout.write(line + '\n'),
  err: (line) => process.stderr.write(line + '\n'),
};

/** Resolves at the first SIGINT or SIGTERM: how a long-running command (`serve`) waits to stop. */
export function untilSignal(): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      process.off('SIGINT', done);
      process.off('SIGTERM', done);
      resolve();
    };
    process.on('SIGINT', done);
    process.on('SIGTERM', done);
  });
}
