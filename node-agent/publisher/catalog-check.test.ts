import { describe, expect, it } from 'vitest';
import { catalogProblems, xidEvent, type OutgoingEvent } from '../events.ts';
import { FakePutEvents } from './fake-put-events.ts';
import { PUBLISHER_METRIC_NAMES as M } from './publisher-metrics.ts';
import { makeHarness } from './test-harness.ts';
import type { PublisherLog } from './types.ts';

const gpu = { index: 3, uuid: 'GPU-5f2c3a1e-8d41-4b7a-9e0f-1c2d3e4f5a6b', pciBusId: '00000000:3B:00.0', name: 'A100' };
const xid = (n: number): OutgoingEvent =>
  xidEvent('gpu-a100-07', Date.parse('2026-12-01T00:00:00Z') + n, {
    gpu,
    xid: 31,
    via: 'kmsg',
    pid: 4242,
    process: 'python3',
    message: 'MMU Fault',
    podUids: [],
  });

describe('the catalog check before send (PublisherDeps.check)', () => {
  it('dead-letters an event whose detail fails its schema, with a log line, and never sends it', async () => {
    const bus = new FakePutEvents();
    const h = await makeHarness(bus.send, { check: catalogProblems });
    const good = xid(1);
    // What an aggregated event with a broken count would look like.
    const bad = { ...xid(2), detail: { ...xid(2).detail, count: 0 } };
    expect(h.publisher.publish(good)).toMatchObject({ ok: true });
    const refused = h.publisher.publish(bad);
    expect(refused.ok).toBe(false);
    await h.tick(1_000);
    await h.publisher.close({ deadlineMs: 1_000 });
    expect(bus.acceptedIds()).toEqual([good.detail.eventId]);
    const dead = await h.deadLetterText();
    expect(dead).toContain(bad.detail.eventId);
    expect(dead).toContain('InvalidDetail');
    expect(dead).toContain('detail.count');
    expect(h.metrics.render()).toContain(`${M.failed} 1`);
  });

  it('logs the refused event naming its field', async () => {
    const bus = new FakePutEvents();
    const lines: { msg: string; fields?: Record<string, unknown> }[] = [];
    const log: PublisherLog = { info() {}, warn() {}, error: (msg, fields) => lines.push({ msg, fields }) };
    const h = await makeHarness(bus.send, { check: catalogProblems, log });
    h.publisher.publish({ ...xid(3), detail: { ...xid(3).detail, countWindowMs: -5 } });
    await h.publisher.close({ deadlineMs: 1_000 });
    expect(lines[0]).toMatchObject({ msg: 'invalid event, dead-lettered and not sent' });
    expect(String(lines[0]!.fields!.problems)).toContain('detail.countWindowMs');
    expect(bus.calls).toEqual([]);
  });

  it('finds nothing wrong with the events the agent builds', () => {
    expect(catalogProblems(xid(4))).toEqual([]);
    expect(catalogProblems({ detailType: 'GPU Nonsense', detail: { eventId: 'x' } })).toEqual([
      'detail-type: unknown detail-type "GPU Nonsense"',
    ]);
  });
});
