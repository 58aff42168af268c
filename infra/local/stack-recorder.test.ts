import { describe, expect, it } from 'vitest';
import type { EventEnvelope, LocalBus } from './bus/index.ts';
import { StackRecorder } from './stack-recorder.ts';

/** The part of the bus the recorder reads: the last `keep` events and the running count. */
function fakeBus(keep: number) {
  const all: EventEnvelope[] = [];
  const bus = {
    get events() {
      return all.slice(-keep);
    },
    get counts() {
      return { events: all.length, eventsByDetailType: {}, deadLetters: 0 };
    },
    on: () => () => {},
  } as unknown as LocalBus;
  const accept = (n: number) => {
    for (let i = 0; i < n; i++) {
      const k = all.length;
      all.push({
        version: '0',
        id: `e${k}`,
        'detail-type': k % 2 ? 'Remediation' : 'GPU XID Error',
        source: 's',
        account: '0',
        time: '2026-01-01T00:00:00Z',
        region: 'r',
        resources: [],
        detail: { node: `n${k}`, action: 'drain-node', phase: 'acted' },
      });
    }
  };
  return { bus, accept };
}

const options = (historySize: number, out: string[]) => ({
  out: (l: string) => out.push(l),
  colour: false,
  sinceStart: () => 0,
  startedAt: () => 0,
  podName: () => undefined,
  keyOf: new Map(),
  historySize,
});

describe('StackRecorder history', () => {
  it('keeps the last historySize events and timeline entries, and counts every event for the summary', () => {
    const { bus, accept } = fakeBus(100);
    const rec = new StackRecorder(bus, options(2, []));
    accept(3);
    rec.flushEvents();
    accept(2);
    rec.flushEvents();
    expect(rec.events.map((e) => e.event.id)).toEqual(['e3', 'e4']);
    expect(rec.entries).toHaveLength(2);
    expect(rec.dropped()).toEqual({ events: 3, deliveries: 0, timeline: 3 });
    expect(rec.tally.eventsByDetailType).toEqual({ 'GPU XID Error': 3, Remediation: 2 });
    expect(rec.tally.count('GPU XID Error', 'n4')).toBe(1);
  });

  it('counts and says so when the bus dropped events before they were printed', () => {
    const { bus, accept } = fakeBus(2);
    const out: string[] = [];
    const rec = new StackRecorder(bus, options(100, out));
    accept(5);
    rec.flushEvents();
    expect(rec.events.map((e) => e.event.id)).toEqual(['e3', 'e4']);
    expect(rec.dropped().events).toBe(3);
    expect(out[0]).toMatch(/3 events not shown: more arrived at once than the bus keeps \(history 2\)/);
    accept(1);
    rec.flushEvents();
    expect(rec.events.map((e) => e.event.id)).toEqual(['e3', 'e4', 'e5']);
  });
});
