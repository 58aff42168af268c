/**
 * `gpu-reflex pattern test`: the local twin of `aws events test-event-pattern`. Prints
 * `{"Result": true}` or `{"Result": false}` and exits 0 either way; an invalid pattern prints AWS's
 * reason on stderr and exits 1, as does a file that cannot be read or is not JSON.
 * Files are read with parseJsonText so number spellings reach the matcher as written.
 */
import { readFile } from 'node:fs/promises';
import { UsageError, type CliIo, type Command } from './cli-kit/command.ts';
import { parseFlags } from './cli-kit/flags.ts';
import { isJsonObject } from './json-number.ts';
import { parseJsonText } from './json-text.ts';
import { InvalidPatternError, matchesPattern } from './pattern.ts';

const NAME = 'gpu-reflex pattern test';

const help = `Usage: ${NAME} --pattern FILE --event FILE

Tests an EventBridge event pattern against one event, like aws events test-event-pattern.
Prints {"Result": true} or {"Result": false} and exits 0 either way.

Options:
  --pattern FILE  the event pattern (JSON); - reads standard input
  --event FILE    the event (a JSON object); - reads standard input
                  Only one of the two may be -.

Exit codes: 0 tested, 1 invalid pattern or unreadable/non-JSON file, 2 bad usage.

Example:
  ${NAME} --pattern events/patterns/remediate.json --event events/catalog/gpu-xid-error.example.json`;

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

const readDefault = (file: string): Promise<string> => (file === '-' ? readStdin() : readFile(file, 'utf8'));

/** Reads and parses one input; on failure reports which option and file, and returns undefined. */
async function load(io: CliIo, option: string, file: string): Promise<{ value: unknown } | undefined> {
  const shown = file === '-' ? 'standard input' : `file "${file}"`;
  let text: string;
  try {
    text = await (io.readInput ?? readDefault)(file);
  } catch (err) {
    io.err(`${NAME}: cannot read --${option} ${shown}: ${(err as Error).message}`);
    return undefined;
  }
  try {
    return { value: parseJsonText(text) };
  } catch (err) {
    io.err(`${NAME}: --${option} ${shown} is not valid JSON: ${(err as Error).message}`);
    return undefined;
  }
}

export const patternTestCommand: Command = {
  path: ['pattern', 'test'],
  summary: 'test an EventBridge pattern against an event, like aws events test-event-pattern',
  help,
  async run(args, io) {
    const values = parseFlags(args, { pattern: { type: 'string' }, event: { type: 'string' } });
    if (values.pattern === undefined) throw new UsageError('--pattern FILE is required');
    if (values.event === undefined) throw new UsageError('--event FILE is required');
    if (values.pattern === '-' && values.event === '-')
      throw new UsageError('only one of --pattern and --event may read standard input (-)');

    const pattern = await load(io, 'pattern', values.pattern);
    if (!pattern) return 1;
    const event = await load(io, 'event', values.event);
    if (!event) return 1;
    if (!isJsonObject(event.value)) {
      io.err(
        `${NAME}: --event ${values.event === '-' ? 'standard input' : `file "${values.event}"`} must hold a ` +
          `JSON object`,
      );
      return 1;
    }
    try {
      io.out(`{"Result": ${matchesPattern(pattern.value, event.value)}}`);
      return 0;
    } catch (err) {
      if (!(err instanceof InvalidPatternError)) throw err;
      io.err(err.message);
      return 1;
    }
  },
};
