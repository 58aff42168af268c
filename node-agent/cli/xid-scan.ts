import { UsageError, type CliIo, type Command } from '../../events/cli-kit/command.ts';
import { parseFlagsAndArgs } from '../../events/cli-kit/flags.ts';
import { errnoPhrase } from '../../events/cli-kit/phrases.ts';
import { readLogLines, splitLines, type ReadLogOptions } from '../kmsg/read-log.ts';
import { scanXids } from '../kmsg/scan.ts';

const HELP = `Usage: gpu-reflex xid scan [FILE|-] [--follow]

Prints one JSON object per NVIDIA XID found in a kernel log: dmesg output, journald
(journalctl -k) output, or /dev/kmsg records. Each object carries the GPU's PCI bus id in
NVML's form (00000000:3B:00.0), the XID, pid and process when the driver names them, the
driver's message, and the catalog's meaning, recommendation and action (for an NVLink5
XID, 144-150, the row of NVIDIA's decode sheet its intrinfo and errorStatus pick).

Arguments:
  FILE            the log to scan; /dev/kmsg scans the kernel ring buffer as it is now
  -               standard input
                  With no FILE, standard input is read when it is not a terminal; on a
                  terminal a FILE is required.

Options:
  -f, --follow    keep reading FILE as it grows (tail -f; with /dev/kmsg, live records)

Examples:
  dmesg | gpu-reflex xid scan
  journalctl -k --since today | gpu-reflex xid scan -
  sudo gpu-reflex xid scan /dev/kmsg --follow`;

export interface XidScanDeps {
  /** Whether standard input is a terminal (then a FILE is required). */
  stdinIsTTY?: () => boolean;
  /** Standard input as chunks, when io.readInput is not given. */
  stdin?: () => AsyncIterable<string | Buffer>;
  /** Passed to the file reader (tests inject the sleep and the abort signal). */
  readOptions?: ReadLogOptions;
}

async function* linesOfText(text: string): AsyncGenerator<string> {
  yield* text.split('\n');
}

function stdinLines(io: CliIo, deps: XidScanDeps): AsyncIterable<string> {
  if (io.readInput) {
    const read = io.readInput;
    return (async function* () {
      yield* linesOfText(await read('-'));
    })();
  }
  return splitLines((deps.stdin ?? (() => process.stdin))());
}

export function createXidScanCommand(deps: XidScanDeps = {}): Command {
  return {
    path: ['xid', 'scan'],
    summary: 'print the XIDs found in a kernel log (dmesg, journald or /dev/kmsg)',
    help: HELP,
    async run(args, io) {
      const { values, positionals } = parseFlagsAndArgs(args, { follow: { type: 'boolean', short: 'f' } });
      if (positionals.length > 1)
        throw new UsageError(`one FILE at most, got ${positionals.length}: ${positionals.join(' ')}`);
      const isTTY = deps.stdinIsTTY ?? (() => Boolean(process.stdin.isTTY));
      const file = positionals[0] ?? (isTTY() ? undefined : '-');
      if (file === undefined)
        throw new UsageError('give a FILE to scan, or - for standard input (e.g. gpu-reflex xid scan /dev/kmsg)');
      if (file === '-' && values.follow)
        throw new UsageError('--follow needs a FILE: standard input is read to its end anyway');

      const lines =
        file === '-'
          ? stdinLines(io, deps)
          : readLogLines(file, { ...deps.readOptions, follow: values.follow ?? false });
      try {
        for await (const xid of scanXids(lines)) io.out(JSON.stringify(xid));
      } catch (err) {
        const e = err as NodeJS.ErrnoException;
        io.err(
          `gpu-reflex xid scan: cannot ` +
            `read ${file}: ${errnoPhrase(e) ?? e.message}${
              e.code === 'EACCES' ? ' (reading /dev/kmsg needs root or CAP_SYSLOG)' : ''
            }`,
        );
        return 1;
      }
      return 0;
    },
  };
}

export const xidScanCommand: Command = createXidScanCommand();
