import { parseXidLine, type KernelXid } from './parse-xid.ts';

/** The XIDs among `lines`, in order; every other line is skipped. */
export async function* scanXids(lines: AsyncIterable<string> | Iterable<string>): AsyncGenerator<KernelXid> {
  for await (const line of lines) {
    const xid = parseXidLine(line);
    if (xid) yield xid;
  }
}
