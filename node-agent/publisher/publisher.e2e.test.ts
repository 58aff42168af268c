/**
 * The publisher through the REAL @aws-sdk/client-eventbridge against the embedded bus
 * (infra/local/bus) on loopback. The client is the production one (`defaultEventBridgeClient()`,
 * no endpoint option), pointed at the bus by AWS_ENDPOINT_URL_EVENTBRIDGE. Publisher time is a
 * FakeClock: retries, windows and probes happen when the test steps it, never by sleeping.
 */
import { appendFile, readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { startLocalBus, type LocalBus } from '../../infra/local/bus/index.ts';
import { healthEvent, xidEvent } from '../events.ts';
import { PUBLISHER_METRIC_NAMES as M } from './publisher-metrics.ts';
import { defaultEventBridgeClient, sdkSender } from './sdk-sender.ts';
import { classifyCallError } from './retry-policy.ts';
import { makeHarness, testEvent } from './test-harness.ts';
import type { PutEventsSender } from './types.ts';

let bus: LocalBus;

beforeAll(() => {
  vi.stubEnv('AWS_REGION', 'us-east-1');
  vi.stubEnv('AWS_ACCESS_KEY_ID', 'AKIDLOCAL');
  vi.stubEnv('AWS_SECRET_ACCESS_KEY', 'local-secret');
});
afterAll(() => vi.unstubAllEnvs());
beforeEach(async () => {
  bus = await startLocalBus({ busName: 'gpu-reflex' });
  vi.stubEnv('AWS_ENDPOINT_URL_EVENTBRIDGE', bus.url);
});
afterEach(async () => bus.close());

/** The real SDK sender, with every call's eventIds recorded (to see exactly what was re-sent). */
function realSender(): { send: PutEventsSender; calls: string[][] } {
  const inner = sdkSender(defaultEventBridgeClient());
  const calls: string[][] = [];
  return {
    calls,
    send: (entries, options) => {
      calls.push(entries.map((e) => (JSON.parse(e.Detail) as { eventId: string }).eventId));
      return inner(entries, options);
    },
  };
}

const busIds = () => bus.events.map((e) => e.detail.eventId as string);
const ids = (n: number, priority = 'critical', from = 0) =>
  Array.from({ length: n }, (_, i) => `${priority}-${from + i}`);

describe('publisher → real SDK → local bus', () => {
  it('delivers an event with the envelope fields the producer set', async () => {
    const { send } = realSender();
    const h = await makeHarness(send);
    const event = testEvent(1, 'critical', { xid: 79, gpu: 'GPU-0f3c' });
    h.publisher.publish(event);
    await h.tick(200);
    expect(bus.events).toHaveLength(1);
    expect(bus.events[0]).toMatchObject({
      source: 'gpu-reflex.node-agent',
      'detail-type': 'GPU XID Error',
      time: '2026-01-01T00:00:01Z',
      resources: event.resources,
      detail: event.detail,
    });
    expect(h.publisher.status().lastPublishAt).toBe(h.clock.now());
  });

  it("carries the producers' catalog events unchanged, eventId included", async () => {
    const { send } = realSender();
    const h = await makeHarness(send);
    const gpu = {
      index: 3,
      uuid: 'GPU-5f2c3a1e-8d41-4b7a-9e0f-1c2d3e4f5a6b',
      pciBusId: '00000000:3B:00.0',
      name: 'NVIDIA A100-SXM4-80GB',
    };
    const at = Date.parse('2026-11-21T03:02:45.120Z');
    const xid = xidEvent('gpu-a100-07', at, {
      gpu,
      xid: 79,
      via: 'nvml',
      pid: 1,
      process: 'python',
      message: 'GPU has fallen off the bus',
      podUids: [],
    });
    const health = healthEvent('gpu-a100-07', at, {
      gpu,
      condition: 'temperature',
      state: 'firing',
      severity: 'critical',
      message: 'hot',
    });
    expect(h.publisher.publish(xid).ok).toBe(true);
    expect(h.publisher.publish(health).ok).toBe(true);
    await h.tick(200);
    expect(bus.events.map((e) => [e['detail-type'], e.detail])).toEqual([
      [xid.detailType, xid.detail],
      [health.detailType, health.detail],
    ]);
  });

  it('spools while the bus is down and delivers every event exactly once, in order, when it is back', async () => {
    const { send } = realSender();
    const h = await makeHarness(send);
    for (let i = 0; i < 5; i++) h.publisher.publish(testEvent(i));
    await h.tick(200);
    expect(busIds()).toEqual(ids(5));
    bus.setDown(true);
    for (let i = 5; i < 18; i++) h.publisher.publish(testEvent(i));
    await h.tick(200);
    await h.tick(1_000);
    await h.tick(1_000);
    expect(h.publisher.status()).toMatchObject({ busReachable: false, spooledEvents: 13 });
    for (let i = 18; i < 25; i++) h.publisher.publish(testEvent(i));
    await h.tick(5_000); // a probe, still down
    expect(h.publisher.status().spooledEvents).toBe(20);
    bus.setDown(false);
    await h.tick(5_000);
    expect(busIds()).toEqual(ids(25));
    expect(h.publisher.status()).toMatchObject({ busReachable: true, spooledEvents: 0, spoolBytes: 0 });
    expect(h.metrics.render()).toContain(`${M.published}{detail_type="GPU XID Error"} 25`);
  });

  it('rides out a few HTTP 5xx answers with backoff alone', async () => {
    const { send, calls } = realSender();
    const h = await makeHarness(send);
    bus.failRequests(2, 503);
    for (let i = 0; i < 3; i++) h.publisher.publish(testEvent(i));
    await h.tick(200);
    await h.tick(1_000);
    await h.tick(1_000);
    expect(calls).toHaveLength(3);
    expect(busIds()).toEqual(ids(3));
    expect(h.publisher.status().spooledEvents).toBe(0);
  });

  it('re-sends only the entries that failed', async () => {
    const { send, calls } = realSender();
    const h = await makeHarness(send);
    for (let i = 0; i < 4; i++) h.publisher.publish(testEvent(i));
    await h.tick(); // fills the window; the next tick sends
    bus.failNext(2, { code: 'ThrottlingException' });
    await h.tick(200);
    await h.tick(1_000);
    expect(calls).toEqual([ids(4), ['critical-0', 'critical-1']]);
    expect(busIds()).toEqual(['critical-2', 'critical-3', 'critical-0', 'critical-1']);
  });

  it('dead-letters an entry the bus refuses for good and delivers the rest', async () => {
    const { send, calls } = realSender();
    const h = await makeHarness(send);
    h.publisher.publish(testEvent(0));
    h.publisher.publish({ ...testEvent(1), source: 'aws.ec2' });
    h.publisher.publish(testEvent(2));
    await h.tick(200);
    await h.tick(60_000);
    expect(calls).toHaveLength(1);
    expect(busIds()).toEqual(['critical-0', 'critical-2']);
    expect(await h.deadLetterText()).toContain('"code":"NotAuthorizedForSourceException"');
    expect(h.metrics.render()).toContain(`${M.failed} 1`);
  });

  it('loses nothing when the agent is killed while spooled: the restarted agent replays first', async () => {
    const { send } = realSender();
    const h = await makeHarness(send);
    bus.setDown(true);
    for (let i = 0; i < 14; i++) h.publisher.publish(testEvent(i));
    await h.tick(200);
    await h.tick(1_000);
    await h.tick(1_000);
    expect(h.publisher.status().spooledEvents).toBe(14);
    bus.setDown(false);
    // No close(): the old publisher is simply abandoned.
    const p = await h.restart(realSender().send);
    p.publish(testEvent(14));
    await h.tick(200);
    expect(busIds()).toEqual(ids(15));
  });

  it('drops bulk first when the spool is full, then normal, never critical', async () => {
    const { send } = realSender();
    const h = await makeHarness(send, { spoolMaxBytes: 2_000, settings: { maxAttempts: 1 } });
    bus.setDown(true);
    h.publisher.publish(testEvent(0, 'bulk'));
    h.publisher.publish(testEvent(0, 'normal'));
    h.publisher.publish(testEvent(1, 'bulk'));
    h.publisher.publish(testEvent(0, 'critical'));
    await h.tick(200);
    for (let i = 1; i < 9; i++) h.publisher.publish(testEvent(i, 'critical'));
    await h.tick();
    bus.setDown(false);
    await h.tick(5_000);
    expect(busIds()).toEqual(ids(9));
    const metrics = h.metrics.render();
    expect(metrics).toContain(`${M.dropped}{priority="bulk"} 2`);
    expect(metrics).toContain(`${M.dropped}{priority="normal"} 1`);
    expect(metrics).not.toContain(`${M.dropped}{priority="critical"}`);
  });

  it('skips a torn last spool line after a crash and delivers the intact records', async () => {
    const { send } = realSender();
    const h = await makeHarness(send, { settings: { maxAttempts: 1 } });
    bus.setDown(true);
    for (let i = 0; i < 3; i++) h.publisher.publish(testEvent(i));
    await h.tick(200);
    await appendFile(h.spoolPath, '1234abcd {"kind":"event","record":{"seq":3,"priority":"crit');
    bus.setDown(false);
    await h.restart(realSender().send);
    expect(busIds()).toEqual(ids(3));
    expect(await readFile(h.spoolPath, 'utf8')).toBe('');
  });

  it('flushes on SIGTERM-style close: sends what it can at once, spools the rest for the next start', async () => {
    const { send } = realSender();
    const h = await makeHarness(send);
    h.publisher.publish(testEvent(0));
    h.publisher.publish(testEvent(1));
    expect(await h.publisher.close({ deadlineMs: 5_000 })).toEqual({ spooled: 0, deadlineHit: false });
    expect(busIds()).toEqual(ids(2));

    const p = await h.restart(realSender().send);
    bus.setDown(true);
    p.publish(testEvent(2));
    p.publish(testEvent(3));
    expect(await p.close({ deadlineMs: 5_000 })).toEqual({ spooled: 2, deadlineHit: false });
    bus.setDown(false);
    await h.restart(realSender().send);
    expect(busIds()).toEqual(ids(4));
  });
});

describe('sdkSender', () => {
  it('gives up a call to a bus that never answers when its signal aborts, as an unavailable bus', async () => {
    let abort: () => void = () => {};
    const silent = createServer(() => abort());
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    vi.stubEnv('AWS_ENDPOINT_URL_EVENTBRIDGE', `http://127.0.0.1:${(silent.address() as AddressInfo).port}`);
    try {
      const controller = new AbortController();
      abort = () => controller.abort();
      const send = sdkSender(defaultEventBridgeClient());
      const err = await send(
        [{ Time: new Date(), Source: 's', DetailType: 'd', Detail: '{}', EventBusName: 'gpu-reflex' }],
        { signal: controller.signal },
      ).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect((err as Error).name).toBe('AbortError');
      expect(classifyCallError(err).failure).toBe('unavailable');
    } finally {
      silent.closeAllConnections();
      silent.close();
    }
  });
});
