import { describe, expect, it } from 'vitest';
import type { OutgoingEvent } from './events.ts';
import { aggregatable, XidAggregator, type XidOccurrence } from './xid-aggregate.ts';

const W = 60_000;
const occ = (xid: number, pid: number | null = 4242, gpuUuid = 'GPU-a'): XidOccurrence => ({
  gpuUuid,
  gpuInstanceId: undefined,
  xid,
  pid,
});
let seq = 0;
const ev = (xid: number): OutgoingEvent => ({
  source: 's',
  detailType: 'GPU XID Error',
  detail: { eventId: `e${++seq}`, xid },
  time: new Date(0),
  priority: 'normal',
});
const counts = (out: OutgoingEvent[]) => out.map((e) => [e.detail.xid, e.detail.count]);

describe('XidAggregator', () => {
  it('sends the first of a run at once, holds its repeats and sends one event with their count when the window closes', () => {
    const a = new XidAggregator({ windowMs: W });
    expect(a.admit(occ(45), ev(45), 0)).toBe(true);
    for (let t = 1_000; t < W; t += 1_000) expect(a.admit(occ(45), ev(45), t)).toBe(false);
    expect(a.held).toBe(59);
    expect(a.due(W - 1)).toEqual([]);
    expect(counts(a.due(W))).toEqual([[45, 59]]);
  });

  it('says on the aggregated event the window its repeats were held over', () => {
    const a = new XidAggregator({ windowMs: 5_000 });
    a.admit(occ(13), ev(13), 0);
    a.admit(occ(13), ev(13), 1_000);
    expect(a.due(4_999)).toEqual([]);
    expect(a.due(5_000).map((e) => [e.detail.count, e.detail.countWindowMs])).toEqual([[1, 5_000]]);
  });

  it('keeps holding while the flood lasts (one event per window) and sends at once again after a quiet window', () => {
    const a = new XidAggregator({ windowMs: W });
    const sent: OutgoingEvent[] = [];
    // 10 minutes of one XID 31 a second from one pid.
    for (let t = 0; t < 10 * W; t += 1_000) {
      sent.push(...a.due(t));
      const e = ev(31);
      if (a.admit(occ(31), e, t)) sent.push(e);
    }
    sent.push(...a.due(10 * W));
    expect(sent).toHaveLength(11);
    expect(sent.reduce((n, e) => n + (Number(e.detail.count) || 1), 0)).toBe(600);
    // The window after the flood closes empty: the run ends, and the next occurrence goes out at once.
    expect(a.due(11 * W)).toEqual([]);
    expect(a.admit(occ(31), ev(31), 11 * W + 1)).toBe(true);
  });

  it('keeps runs apart by GPU, pid and XID', () => {
    const a = new XidAggregator({ windowMs: W });
    expect([
      a.admit(occ(13, 1), ev(13), 0),
      a.admit(occ(13, 2), ev(13), 1),
      a.admit(occ(13, 1, 'GPU-b'), ev(13), 2),
      a.admit(occ(31, 1), ev(31), 3),
    ]).toEqual([true, true, true, true]);
    expect(a.admit(occ(13, 1), ev(13), 4)).toBe(false);
  });

  // 48/79/95 fence, drain or reset; 149 and 74 decide by sub-code or workflow; 999 and 61-like unknowns quarantine.
  it.each([48, 79, 95, 119, 149, 147, 74, 999])('never holds XID %i, however often it repeats', (xid) => {
    const a = new XidAggregator({ windowMs: W });
    for (let t = 0; t < 10; t++) expect(a.admit(occ(xid), ev(xid), t)).toBe(true);
    expect(a.held).toBe(0);
  });

  it('holds only XIDs whose catalog action stays with the workload', () => {
    expect([13, 31, 43, 45, 68, 94].map(aggregatable)).toEqual([true, true, true, true, true, true]);
    expect([48, 79, 95, 149, 999].map(aggregatable)).toEqual([false, false, false, false, false]);
  });

  it('sends every held repeat at shutdown', () => {
    const a = new XidAggregator({ windowMs: W });
    a.admit(occ(45), ev(45), 0);
    a.admit(occ(45), ev(45), 10);
    a.admit(occ(45), ev(45), 20);
    expect(counts(a.due(30, true))).toEqual([[45, 2]]);
    expect(a.held).toBe(0);
  });
});
