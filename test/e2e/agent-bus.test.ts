/**
 * The agent end to end: mock NVML (real koffi binding) → Agent → Publisher → the REAL
 * @aws-sdk/client-eventbridge → the local bus on loopback. The publisher runs on a FakeClock
 * (batch windows, backoff and probes happen when the test steps it); the agent's clock and the
 * mock's manual clock move together. Nothing sleeps.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { startLocalBus, type LocalBus } from '../../infra/local/bus/index.ts';
import { validateEvent } from '../../events/validate.ts';
import { makeHarness, type Harness } from '../../node-agent/publisher/test-harness.ts';
import { defaultEventBridgeClient, sdkSender } from '../../node-agent/publisher/sdk-sender.ts';
import { podUidOf, startAgent, type AgentFixture } from '../support/agent-fixture.ts';

let bus: LocalBus;
let fx: AgentFixture | undefined;

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
afterEach(async () => {
  await fx?.close();
  fx = undefined;
  await bus.close();
});

/** The production sender: the SDK client built with no options, pointed by the environment. */
const realSend = () => sdkSender(defaultEventBridgeClient());

/** An agent whose sink is whichever publisher the harness holds now (it changes on restart). */
async function agentOnBus(): Promise<{ fx: AgentFixture; h: Harness }> {
  const h = await makeHarness(realSend());
  fx = await startAgent('dgx-a100-8x.json', {
    pids: [4100, 4101, 4102, 4103, 4104, 4105, 4106, 4107],
    overrides: { sink: { publish: (e) => h.publisher.publish(e) } },
  });
  return { fx, h };
}

/** Injects an XID on `gpu` and lets the agent see it (one agent second apart, so ids differ). */
async function xid(f: AgentFixture, gpu: number, code: number): Promise<void> {
  f.advance(1000);
  f.mock.injectXid(gpu, code);
  expect(await f.agent.pollEventsOnce(0)).toHaveLength(1);
}

const busXids = () =>
  bus.events
    .filter((e) => e['detail-type'] === 'GPU XID Error')
    .map((e) => [(e.detail.gpu as { index: number }).index, e.detail.xid]);

describe('agent → real SDK → local bus', () => {
  it('delivers an injected XID as a valid GPU XID Error event with its GPU and pods', async () => {
    const { fx, h } = await agentOnBus();
    await fx.agent.sampleOnce();
    await xid(fx, 3, 79);
    await h.tick(200);
    const events = bus.events;
    expect(events.map((e) => e['detail-type'])).toEqual(['GPU Inventory', 'GPU XID Error']);
    for (const e of events) expect(validateEvent(e)).toMatchObject({ ok: true });
    expect(events[1]).toMatchObject({
      source: 'gpu-reflex.node-agent',
      detail: {
        node: 'gpu-node-1',
        xid: 79,
        via: 'nvml',
        gpu: { index: 3, uuid: fx.agent.source.byIndex(3)?.uuid, pciBusId: fx.agent.source.byIndex(3)?.pciBusId },
        pods: [{ uid: podUidOf(4103) }],
      },
    });
  });

  it('delivers every event once, in order, after the bus was down and came back', async () => {
    const { fx, h } = await agentOnBus();
    await xid(fx, 0, 13);
    await h.tick(200);
    bus.setDown(true);
    const seq: [number, number][] = [
      [1, 31],
      [2, 43],
      [3, 79],
      [4, 48],
      [5, 94],
    ];
    for (const [gpu, code] of seq) await xid(fx, gpu, code);
    await h.tick(200);
    await h.tick(1_000);
    await h.tick(1_000);
    expect(h.publisher.status()).toMatchObject({ busReachable: false, spooledEvents: 5 });
    bus.setDown(false);
    await xid(fx, 6, 31);
    await h.tick(5_000);
    expect(busXids()).toEqual([[0, 13], ...seq, [6, 31]]);
    const ids = bus.events.map((e) => e.detail.eventId);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('loses nothing when the agent is killed while events are spooled and restarted on the same spool', async () => {
    const { fx, h } = await agentOnBus();
    bus.setDown(true);
    for (const gpu of [0, 1, 2, 3]) await xid(fx, gpu, 79);
    await h.tick(200);
    await h.tick(1_000);
    await h.tick(1_000);
    expect(h.publisher.status().spooledEvents).toBe(4);
    // Killed: no close(). The abandoned publisher's clock never moves again, like a dead process.
    bus.setDown(false);
    await h.restart(realSend());
    await xid(fx, 4, 79);
    await h.tick(200);
    expect(busXids()).toEqual([
      [0, 79],
      [1, 79],
      [2, 79],
      [3, 79],
      [4, 79],
    ]);
    for (const e of bus.events) expect(validateEvent(e)).toMatchObject({ ok: true });
  });
});
