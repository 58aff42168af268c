/**
 * The dead-letter file: events the bus refused for good (MalformedDetail, InvalidArgument, a
 * request it will never accept). They are kept, in the spool's line format with the error code,
 * so a person can read, fix and re-send them; nothing retries them automatically.
 */
import { appendFile, mkdir, open } from 'node:fs/promises';
import { dirname } from 'node:path';
import { encodeLine } from './spool-codec.ts';
import type { QueuedRecord } from './types.ts';

/** Port. Contract: when `write` resolves, the records are on disk (fsynced). */
export interface DeadLetterSink {
  write(entries: readonly { record: QueuedRecord; code: string; message: string }[], at: number): Promise<void>;
}

export function fileDeadLetter(path: string): DeadLetterSink {
  let ready: Promise<unknown> | undefined;
  return {
    async write(entries, at) {
      if (entries.length === 0) return;
      ready ??= mkdir(dirname(path), { recursive: true });
      await ready;
      const lines = entries.map((e) =>
        encodeLine({ kind: 'dead', at, code: e.code, message: e.message, record: e.record }),
      );
      await appendFile(path, Buffer.concat(lines));
      const fh = await open(path, 'r');
      try {
        await fh.sync();
      } finally {
        await fh.close();
      }
    },
  };
}
