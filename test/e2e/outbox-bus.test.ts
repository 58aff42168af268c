/**
 * The outbox through the local bus and the real EventBridge client (issue #10): the bus refuses
 * the functions' first PutEvents entries; the handler ends without an error (issue #29: no retry, no
 * dead letter) and the sweep, every minute, sends what the outbox holds; the Remediation is on the bus
 * exactly once afterwards, with what was done, and the node was acted on once.
 */
import { manualClock } from '../../functions/adapters/clock.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REMEDIATION } from '../../events/index.ts';
import { xidEvent } from '../../node-agent/events.ts';
import { NAMESPACE, startRemediationStack, type RemediationStack } from './remediation-stack.ts';

let stack: RemediationStack;
const clock = manualClock(Date.parse('2026-11-21T03:00:00.000Z'));

beforeAll(async () => {
  stack = await startRemediationStack({
    clock,
    fleet: {
      nodes: [
        {
          name: 'flaky',
          count: 5,
          labels: { 'gpu-reflex.io/pool': 'flaky' },
          allocatable: { cpu: '96', memory: '1000Gi', 'nvidia.com/gpu': '8' },
        },
      ],
      namespaces: [{ name: NAMESPACE }, { name: 'ml' }],
      pods: [
        {
          name: 'train',
          namespace: 'ml',
          node: 'flaky-0',
          owner: { kind: 'Job' as const, name: 'train' },
          requests: { 'nvidia.com/gpu': 2 },
        },
      ],
    },
  });
}, 60_000);

afterAll(async () => {
  await stack?.close();
});

describe('outbox on the embedded stack', () => {
  it('puts the Remediation on the bus exactly once after PutEvents failed twice, with no failed delivery', async () => {
    const gpu = {
      index: 0,
      uuid: 'GPU-00000000-0000-4000-8000-000000000000',
      pciBusId: '00000000:10:00.0',
      name: 'NVIDIA A100-SXM4-80GB',
    };
    const xid = xidEvent('flaky-0', clock.now(), {
      gpu,
      xid: 79,
      via: 'nvml',
      pid: null,
      process: null,
      message: 'Xid 79',
      podUids: [],
    });
    await stack.send([xid]);
    stack.bus.failNext(2, { code: 'InternalFailure' });
    let failed = 0;
    stack.bus.on('failed', () => void failed++);
    await stack.advance(0);
    expect(stack.published(REMEDIATION)).toHaveLength(0);
    for (let m = 0; m < 10; m++) await stack.advance(60_000);
    // The handler did not throw (issue #29): nothing for the bus to retry or dead-letter; the sweep sent it.
    expect(failed).toBe(0);
    const forThisFault = stack
      .published(REMEDIATION)
      .filter(
        (e) =>
          (e.detail as { trigger: { eventId: string } }).trigger.eventId ===
          (xid.detail as { eventId: string }).eventId,
      );
    expect(forThisFault).toHaveLength(1);
    expect(forThisFault[0]!.detail).toMatchObject({ action: 'drain-node', target: { node: 'flaky-0' } });
    // What it reports is what was done (the recovered copy carries the outcomes, not the plan's
    // copy recorded before acting, whose steps read "skipped").
    const steps = (
      forThisFault[0]!.detail as { steps: { kind: string; target: string; result: string; message?: string }[] }
    ).steps;
    expect(steps).toContainEqual(expect.objectContaining({ kind: 'cordon', target: 'node/flaky-0', result: 'done' }));
    expect(steps).toContainEqual(expect.objectContaining({ kind: 'evict', target: 'pod/ml/train', result: 'done' }));
    // This stack configures no chat: its notice is skipped, and says so; nothing else is.
    expect(
      steps.filter(
        (st) =>
          st.result === 'skipped' && !(st.kind === 'notify' && st.message?.startsWith('no chat webhook is configured')),
      ),
    ).toEqual([]);
    expect(stack.sim.store.node('flaky-0')?.spec?.unschedulable).toBe(true);
    expect(stack.sim.store.node('flaky-0')?.metadata.annotations?.['gpu-reflex.io/outbox']).toBeUndefined();
  });
});
