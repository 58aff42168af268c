/**
 * `gpu-reflex bench xid`: the kernel-log XID scan on long lines, through the same path as
 * `xid scan FILE` (64 KiB reads → splitLines → parseXidLine). It was quadratic: one 50 MB line took
 * 65 s. Not a vitest test: it measures real time.
 */
import { below, info, type BenchSuite } from '../../bench/harness.ts';
import { splitLines } from './read-log.ts';
import { scanXids } from './scan.ts';

const MB = 1024 * 1024;

async function* reads(text: string): AsyncGenerator<Buffer> {
  const bytes = Buffer.from(text, 'latin1');
  for (let i = 0; i < bytes.length; i += 64 * 1024) yield bytes.subarray(i, i + 64 * 1024);
}

/** Milliseconds to scan `text` read in 64 KiB pieces; the XIDs found are counted so none is skipped. */
async function scanMs(text: string): Promise<{ ms: number; xids: number }> {
  const started = performance.now();
  let xids = 0;
  for await (const _ of scanXids(splitLines(reads(text)))) xids++;
  return { ms: performance.now() - started, xids };
}

export const xidScanBenchSuite: BenchSuite = {
  name: 'xid',
  summary: 'kernel-log XID scan: 50 MB lines with and without XIDs (was 65 s)',
  async run(progress) {
    const head = 'NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=p, ';
    const size = 50 * MB;
    progress('one 50 MB line without an XID');
    const plain = await scanMs('x'.repeat(size));
    progress('one 50 MB line starting with an XID');
    const withXid = await scanMs(head + 'y'.repeat(size - head.length));
    // The old parser rescanned the tail from every head when a carriage return followed them.
    progress('one 5 MB line of 150,000 XID heads before a carriage return');
    const heads = await scanMs('NVRM: Xid (PCI:0000:3b:00): 79, a'.repeat(150_000) + '\r');
    progress('50 MB of ordinary 100-byte lines, one XID per 1,000');
    const ordinary =
      Array.from({ length: 1000 }, (_, i) => (i === 0 ? head : 'kernel: ') + 'z'.repeat(90)).join('\n') + '\n';
    const many = await scanMs(ordinary.repeat(Math.floor(size / ordinary.length)));
    return [
      below('50 MB line without an XID', plain.ms, 'ms', 2_000),
      below('50 MB line with an XID', withXid.ms, 'ms', 2_000),
      info('  XIDs found in it', withXid.xids, 'xids'),
      below('5 MB line of 150k XID heads + \\r', heads.ms, 'ms', 2_000),
      below('50 MB of 100-byte lines', many.ms, 'ms', 5_000),
      info('  throughput on 100-byte lines', size / MB / (many.ms / 1000), 'MB/s'),
    ];
  },
};
