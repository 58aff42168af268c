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

/**
 * `gpu-reflex xid scan | head -2`: a reader that went away is not an error worth a stack trace.
 * Called by the CLI's own entry (main.ts), never on import: the modules that import this file
 * (the node agent's shipped entry among them) must not have their process's stdout rewired.
 */
export function exitQuietlyOnEpipe(): void {
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(0);
    throw err;
  });
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
