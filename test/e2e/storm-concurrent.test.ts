/**
 * The blast-radius limit under concurrent deliveries (issue #10): the one case the ledger exists
 * for. Eight invocations at once, each reading the same pool with nobody out yet; only the pool's
 * allowance may be taken out, the rest are held for approval.
 */
import { manualClock } from '../../functions/adapters/clock.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APPROVAL_REQUESTED } from '../../events/index.ts';
import { STATE_LABEL } from '../../functions/remediate/core/state.ts';
import { xidEvent } from '../../node-agent/events.ts';
import { NAMESPACE, startRemediationStack, type RemediationStack } from './remediation-stack.ts';

let stack: RemediationStack;
const clock = manualClock(Date.parse('2026-11-21T03:00:00.000Z'));

beforeAll(async () => {
  stack = await startRemediationStack({
    clock,
    concurrency: 8,
    fleet: {
      nodes: [
        {
          name: 'storm',
          count: 20,
          labels: { 'gpu-reflex.io/pool': 'storm' },
          allocatable: { cpu: '96', memory: '1000Gi', 'nvidia.com/gpu': '8' },
        },
      ],
      namespaces: [{ name: NAMESPACE }],
    },
  });
}, 60_000);

afterAll(async () => {
  await stack?.close();
});

describe('an XID storm delivered 8 at a time', () => {
  it('takes out no more than the blast radius allows (20% of 20 = 4) and holds the rest for approval', async () => {
    const failing = Array.from({ length: 12 }, (_, i) => `storm-${i}`);
    const gpu = {
      index: 0,
      uuid: 'GPU-00000000-0000-4000-8000-000000000000',
      pciBusId: '00000000:10:00.0',
      name: 'NVIDIA A100-SXM4-80GB',
    };
    await stack.send(
      failing.map((n) =>
        xidEvent(n, clock.now(), {
          gpu,
          xid: 79,
          via: 'nvml',
          pid: null,
          process: null,
          message: 'Xid 79',
          podUids: [],
        }),
      ),
    );
    await stack.advance(0);
    for (let i = 0; i < 5; i++) await stack.advance(1_000); // retries of invocations that met a busy ledger
    const out = failing.filter((n) => stack.sim.store.node(n)?.spec?.unschedulable === true);
    const held = failing.filter((n) => stack.sim.store.node(n)?.metadata.labels?.[STATE_LABEL] === 'awaiting-approval');
    expect(out).toHaveLength(4);
    expect(held).toHaveLength(8);
    expect(
      new Set(stack.published(APPROVAL_REQUESTED).map((e) => (e.detail as { plan: { node: string } }).plan.node)),
    ).toEqual(new Set(held));
  });
});
