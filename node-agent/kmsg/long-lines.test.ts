import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { describeXid } from '../../events/xid.ts';
import { normalizePciBusId, parseXidLine } from './parse-xid.ts';
import { splitLines } from './read-log.ts';

/**
 * Long lines: `xid scan` was quadratic (a 50 MB line took 65 s). The timing lives in
 * `gpu-reflex bench xid`; here: long lines parse, and the linear parser finds exactly what the
 * old one-regex parser found.
 */

/** The previous parser, kept as the reference: one regex with the rest of the line as `(.*)$`. */
const OLD_XID_LINE =
  /NVRM: Xid \((?:PCI:)?([0-9a-fA-F]{1,8}:[0-9a-fA-F]{1,2}:[0-9a-fA-F]{1,2}(?:\.[0-7])?)((?:\s+GPU-C?I:\s*[0-9a-fA-F]+)*)\):\s*(\d{1,6})\b,?\s*(.*)$/;
function oldHead(line: string) {
  const m = OLD_XID_LINE.exec(line.replace(/\r$/, ''));
  if (!m || !normalizePciBusId(m[1] ?? '')) return undefined;
  return { pci: normalizePciBusId(m[1] ?? ''), xid: Number(m[3]), rest: (m[4] ?? '').trim() };
}

async function* chunked(text: string, size: number): AsyncGenerator<Buffer> {
  const bytes = Buffer.from(text, 'utf8');
  for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
}
async function collect(lines: AsyncIterable<string>): Promise<string[]> {
  const out: string[] = [];
  for await (const l of lines) out.push(l);
  return out;
}

describe('long kernel-log lines', () => {
  const head = 'NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=p, ';

  it('a 4 MB line with an XID at its start parses, keeping the whole message', () => {
    const xid = parseXidLine(head + 'y'.repeat(4_000_000));
    expect(xid).toMatchObject({
      pci: '00000000:3B:00.0',
      xid: 79,
      pid: 1,
      process: 'p',
      action: describeXid(79).action,
    });
    expect(xid?.message).toHaveLength(4_000_000);
  });

  it('a 4 MB line without an XID, and one of 100,000 XID heads before a carriage return, find what the old parser found', () => {
    expect(parseXidLine('x'.repeat(4_000_000))).toBeUndefined();
    // Every head is followed by a \r mid-line, so `(.*)$` failed for each: the old parser rescanned
    // the tail from every head. The last head after the \r is the one that counts.
    const line = 'NVRM: Xid (PCI:0000:3b:00): 79, a'.repeat(100_000) + '\rNVRM: Xid (PCI:0000:3b:00): 48, DBE';
    expect(parseXidLine(line)).toMatchObject({ xid: 48, message: 'DBE' });
    expect(parseXidLine(line + '\u2028')).toBeUndefined();
  });

  it('finds the same XID as the old parser on any line', () => {
    const piece = fc.constantFrom(
      'NVRM: Xid (PCI:0000:3b:00): 79, ',
      'NVRM: Xid (0000:01:00): 13',
      'NVRM: Xid (PCI:0000:c1:00 GPU-I:05 GPU-CI:1): 43,',
      'NVRM: Xid (',
      'pid=1, name=x, ',
      ' ',
      '\t',
      '\r',
      '\n',
      '\u2028',
      ',',
      '1234567',
      ')',
      ':',
      'GPU-I:',
      'zz',
    );
    fc.assert(
      fc.property(
        fc.array(fc.oneof(piece, fc.string({ maxLength: 4 })), { maxLength: 12 }).map((p) => p.join('')),
        (line) => {
          const now = parseXidLine(line);
          const before = oldHead(line);
          expect(now === undefined ? undefined : { pci: now.pci, xid: now.xid }).toEqual(
            before && { pci: before.pci, xid: before.xid },
          );
          if (now && before) expect(before.rest.endsWith(now.message)).toBe(true);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('splitLines joins a 4 MB line read in 64 KiB pieces, and keeps characters split across reads', async () => {
    const long = 'é'.repeat(2_000_000); // 4 MB of two-byte characters: reads end mid-character
    const lines = await collect(splitLines(chunked(`a\n${long}\n\nb`, 64 * 1024 + 1)));
    expect(lines.length).toBe(4);
    expect(lines[1] === long).toBe(true);
    expect([lines[0], lines[2], lines[3]]).toEqual(['a', '', 'b']);
  });
});
