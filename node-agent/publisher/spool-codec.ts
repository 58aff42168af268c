/**
 * The spool's line format (also used by the dead-letter file). One record per line:
 *
 *     <crc32 of the JSON, 8 lower-case hex digits> <space> <JSON> \n
 *
 * A crash can leave the last line torn (no newline, or a prefix of the bytes): the checksum or
 * the missing newline reveals it and the reader skips it. JSON keeps the file greppable by hand.
 * Records are parsed with zod: the file is input like any other and may be damaged or old.
 */
import { crc32 } from 'node:zlib';
import * as z from 'zod';
import { PRIORITIES, type QueuedRecord } from './types.ts';

const QueuedRecordSchema = z
  .object({
    seq: z.number().int().nonnegative(),
    priority: z.enum(PRIORITIES),
    source: z.string(),
    detailType: z.string(),
    detail: z.string(),
    time: z.number(),
    resources: z.array(z.string()).optional(),
    eventId: z.string(),
  })
  .strict();

const SpoolLineSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('event'), record: QueuedRecordSchema }).strict(),
  // Written after a successful PutEvents so a restart does not re-send what was delivered.
  z.object({ kind: z.literal('ack'), seqs: z.array(z.number().int().nonnegative()) }).strict(),
  z
    .object({
      kind: z.literal('dead'),
      at: z.number(),
      code: z.string(),
      message: z.string(),
      record: QueuedRecordSchema,
    })
    .strict(),
]);
export type SpoolLine = z.infer<typeof SpoolLineSchema>;

export function encodeLine(line: SpoolLine): Buffer {
  const json = JSON.stringify(line);
  const body = Buffer.from(json, 'utf8');
  const sum = (crc32(body) >>> 0).toString(16).padStart(8, '0');
  return Buffer.concat([Buffer.from(sum + ' ', 'ascii'), body, Buffer.from('\n', 'ascii')]);
}

export function encodeEvent(record: QueuedRecord): Buffer {
  return encodeLine({ kind: 'event', record });
}

/** A decoded line with its place in the file (bytes), so records can be re-read later. */
export interface ScannedLine {
  offset: number;
  length: number;
  line: SpoolLine;
}

export interface ScanResult {
  lines: ScannedLine[];
  /** Lines whose checksum or shape was wrong (skipped). */
  corrupt: number;
  /** Bytes after the last newline: a write torn by a crash (skipped). */
  tornBytes: number;
}

/** Decodes a whole spool buffer. Never throws on bad content: bad lines are counted and skipped. */
export function scanLines(buf: Buffer): ScanResult {
  const lines: ScannedLine[] = [];
  let corrupt = 0;
  let start = 0;
  for (;;) {
    const nl = buf.indexOf(0x0a, start);
    if (nl < 0) break;
    const line = decodeLine(buf.subarray(start, nl));
    if (line) lines.push({ offset: start, length: nl + 1 - start, line });
    else corrupt++;
    start = nl + 1;
  }
  return { lines, corrupt, tornBytes: buf.length - start };
}

/** One line without its newline; undefined when the checksum, JSON or shape is wrong. */
export function decodeLine(bytes: Buffer): SpoolLine | undefined {
  if (bytes.length < 10 || bytes[8] !== 0x20) return undefined;
  const sum = bytes.subarray(0, 8).toString('ascii');
  const body = bytes.subarray(9);
  if ((crc32(body) >>> 0).toString(16).padStart(8, '0') !== sum) return undefined;
  let json: unknown;
  try {
    json = JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
  const parsed = SpoolLineSchema.safeParse(json);
  return parsed.success ? parsed.data : undefined;
}
