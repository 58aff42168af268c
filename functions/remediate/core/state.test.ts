import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  emptyState,
  encodeHistory,
  encodeNodeState,
  HISTORY_ANNOTATION,
  LIMITS,
  parseNodeState,
  QUARANTINED_GPUS_ANNOTATION,
  REPAIRED_AT_ANNOTATION,
  STATE_LABEL,
  type Incident,
  type NodeState,
} from './state.ts';
import { at } from '../testing.ts';

function incident(n: number, o: Partial<Incident> = {}): Incident {
  return {
    key: `gpu-a100-07/GPU-${n}/xid-48`,
    trigger: 'xid-48',
    xid: 48,
    gpu: `GPU-${n}`,
    scope: 'gpu',
    action: 'quarantine-gpu',
    ladder: ['quarantine-gpu', 'reboot-node'],
    level: 0,
    phase: 'quarantined',
    firstAt: at(n),
    lastAt: at(n),
    count: 1,
    workloads: ['uid-a'],
    pods: ['uid-a'],
    since: at(n),
    eventId: `xid:${n}`,
    ...o,
  };
}

describe('node state codec', () => {
  it('round-trips through the node metadata', () => {
    const s: NodeState = {
      ...emptyState(),
      phase: 'draining',
      incidents: [incident(1)],
      recent: [{ key: 'k', at: at(1), pods: ['u'] }],
      handled: ['e1'],
      quarantinedGpus: ['GPU-1'],
      taint: 'xid-79',
      cordoned: true,
      restoredAt: at(0),
    };
    const enc = encodeNodeState(s);
    expect(enc.labels[STATE_LABEL]).toBe('draining');
    expect(enc.taint).toEqual({ key: 'gpu-reflex.io/unhealthy', value: 'xid-79', effect: 'NoSchedule' });
    expect(enc.unschedulable).toBe(true);
    const back = parseNodeState(enc.annotations as Record<string, string>, enc.labels, enc.taint ? [enc.taint] : [], {
      unschedulable: true,
    });
    expect(back).toEqual({ ...s, warnings: [] });
  });

  it('removes the quarantined-gpus annotation when nothing is quarantined', () => {
    expect(encodeNodeState(emptyState()).annotations[QUARANTINED_GPUS_ANNOTATION]).toBeNull();
  });

  it.each([
    ['not json', { [HISTORY_ANNOTATION]: '{oops' }],
    ['json of the wrong shape', { [HISTORY_ANNOTATION]: '{"v":2}' }],
    [
      'a bad incident',
      {
        [HISTORY_ANNOTATION]: JSON.stringify({
          v: 1,
          incidents: [{ key: 1 }],
          recent: [],
          handled: [],
          cordoned: false,
        }),
      },
    ],
    ['a bad quarantined list', { [QUARANTINED_GPUS_ANNOTATION]: '{"a":1}' }],
    ['a bad repaired-at', { [REPAIRED_AT_ANNOTATION]: 'yesterday' }],
  ])('never throws on %s: empty state plus a warning', (_, annotations) => {
    const s = parseNodeState(annotations, {}, []);
    expect(s.incidents).toEqual([]);
    expect(s.warnings.length).toBe(1);
  });

  it('warns about an unknown state label and treats the node as healthy', () => {
    const s = parseNodeState({}, { [STATE_LABEL]: 'on-fire' }, []);
    expect(s.phase).toBe('healthy');
    expect(s.warnings[0]).toContain('on-fire');
  });

  it('assumes the cordon beside our taint is ours when the history is lost', () => {
    const s = parseNodeState(
      { [HISTORY_ANNOTATION]: 'garbage' },
      {},
      [{ key: 'gpu-reflex.io/unhealthy', value: 'xid-79', effect: 'NoSchedule' }],
      { unschedulable: true },
    );
    expect(s).toMatchObject({ taint: 'xid-79', cordoned: true });
  });

  it('never throws on arbitrary metadata', () => {
    fc.assert(
      fc.property(fc.anything(), fc.anything(), fc.anything(), (a, l, t) => {
        const s = parseNodeState(a as Record<string, string>, l as Record<string, string>, t as never);
        expect(Array.isArray(s.incidents)).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('never throws on arbitrary strings in our annotations', () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), fc.string(), (h, q, r) => {
        parseNodeState(
          { [HISTORY_ANNOTATION]: h, [QUARANTINED_GPUS_ANNOTATION]: q, [REPAIRED_AT_ANNOTATION]: r },
          { [STATE_LABEL]: h },
          [],
        );
      }),
      { numRuns: 300 },
    );
  });

  it('keeps the history under its byte cap however much is thrown at it, dropping the oldest first', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 400 }),
        fc.integer({ min: 0, max: 120 }),
        fc.integer({ min: 1, max: 60 }),
        (handled, incidents, pods) => {
          const uids = Array.from({ length: pods }, (_, i) => `7c1e4b52-93a0-4d8e-b6f1-${String(i).padStart(12, '0')}`);
          const s: NodeState = {
            ...emptyState(),
            handled: Array.from({ length: handled }, (_, i) =>
              `xid:gpu-a100-07:GPU-5f2c3a1e-8d41-4b7a-9e0f-1c2d3e4f5a6b:79:${i}`.padEnd(120, 'x'),
            ),
            incidents: Array.from({ length: incidents }, (_, i) =>
              incident(i, { workloads: uids, pods: uids, phase: i % 2 ? 'closed' : 'quarantined' }),
            ),
            recent: Array.from({ length: handled }, (_, i) => ({
              key: `gpu-a100-07/GPU-${i}/xid-13`,
              at: at(i),
              pods: uids,
            })),
          };
          const text = encodeHistory(s);
          expect(Buffer.byteLength(text)).toBeLessThanOrEqual(LIMITS.historyBytes);
          const back = parseNodeState({ [HISTORY_ANNOTATION]: text }, {}, []);
          expect(back.warnings).toEqual([]);
          expect(back.handled.length).toBeLessThanOrEqual(LIMITS.handled);
          if (handled > 0 && back.handled.length > 0) expect(back.handled.at(-1)).toBe(s.handled.at(-1));
        },
      ),
      { numRuns: 60 },
    );
  });
});

describe('history trimming', () => {
  it('drops whole open incidents as a last resort, and always terminates', () => {
    const long = 'x'.repeat(9000);
    const s: NodeState = {
      ...emptyState(),
      incidents: Array.from({ length: 30 }, (_, i) => incident(i, { key: `${long}${i}`, workloads: ['u'], pods: [] })),
    };
    const text = encodeHistory(s);
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(LIMITS.historyBytes);
    const kept = parseNodeState({ [HISTORY_ANNOTATION]: text }, {}, []).incidents;
    expect(kept.length).toBeGreaterThan(0);
    expect(kept.at(-1)?.key).toBe(`${long}29`); // the newest survive
  });
});
