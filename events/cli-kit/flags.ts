/**
 * Flag parsing every command shares: named options (and, for the commands that take FILEs or IDs,
 * positionals), unknown options refused, node's own parser message turned into a UsageError (one
 * line, exit code 2); and the one check of a listening port the `serve` commands take.
 */
import { parseArgs } from 'node:util';
import { UsageError } from './command.ts';

type FlagOptions = Record<string, { type: 'string' | 'boolean'; multiple?: boolean; short?: string }>;

/** The values of `args` for `options`; a UsageError for an unknown option, a positional or a missing value. */
export function parseFlags<T extends FlagOptions>(args: string[], options: T) {
  try {
    return parseArgs({ args, options, strict: true, allowPositionals: false }).values;
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

/**
 * The values of `args` for `options` and its positionals, in order; a UsageError for an unknown option or a missing
 * value. How many positionals a command takes, and the words for too few or too many, stay the command's.
 */
export function parseFlagsAndArgs<T extends FlagOptions>(args: string[], options: T) {
  try {
    return parseArgs({ args, options, strict: true, allowPositionals: true });
  } catch (err) {
    throw new UsageError(parseErrorWords((err as Error).message));
  }
}

/**
 * Node's parser message without its advice (put a positional that starts with '-' after `--`), which it adds where
 * positionals are allowed: a bad flag reads the same from every command, and from bin/errors.ts, which says node's own
 * error when one reaches it.
 */
export function parseErrorWords(message: string): string {
  return message.replace(/\. To specify a positional argument.*$/, '');
}

/** `--NAME`'s port: 0 (the OS chooses) when unset, otherwise an integer from 0 to 65535. */
export function portFlag(name: string, text: string | undefined): number {
  // Number('') is 0: an empty `--port=` is refused, not read as "the OS chooses".
  const n = text === undefined ? 0 : text.trim() === '' ? NaN : Number(text);
  if (!Number.isInteger(n) || n < 0 || n > 65535)
    throw new UsageError(`--${name} must be an integer from 0 to 65535 (got "${text}")`);
  return n;
}
