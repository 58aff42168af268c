/**
 * The blast-radius limit under concurrent deliveries, the case its ledger exists for: the bus runs
 * 8 deliveries at once (like concurrent Lambda invocations), and every node of two pools (20 and 8
 * nodes, 3 allowed out in each) fails at the same moment. Each invocation reads its pool's count before it acts, so several read the same
 * count; only the ledger's reservation (functions/remediate/ledger.ts `reserveSlot`, taken in
 * run.ts before anything capacity-taking) keeps them from all acting. Without it this test fails:
 * the first 8 deliveries, all for burst-a, take 8 of its nodes out against an allowance of 3.
 *
 * Everything real as in remediation.test.ts: the EventBridge SDK, the local bus and serverless.yml
 * rules, the remediate handler, @kubernetes/client-node, the simulated cluster. Virtual time.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APPROVAL_REQUESTED, REMEDIATION } from '../../events/index.ts';
import { manualClock } from '../../functions/adapters/clock.ts';
import { STATE_LABEL } from '../../functions/remediate/core/state.ts';
import type { Fleet, Node } from '../../infra/local/kube/index.ts';
import { xidEvent } from '../../node-agent/events.ts';
import { NAMESPACE, startRemediationStack, type RemediationStack } from './remediation-stack.ts';

const CONCURRENCY = 8;
/** Every node of both pools fails; burst-a's faults arrive first, so the first 8 deliveries all race for it. */
const SIZES = { 'burst-a': 20, 'burst-b': 8 } as const;
const POOLS = Object.keys(SIZES) as (keyof typeof SIZES)[];
/** At most 3 nodes of a pool out within the window (the share alone would allow them all). */
const LIMIT = 3;
const TAINT_KEY = 'gpu-reflex.io/unhealthy';

const clock = manualClock(Date.parse('2026-11-21T03:00:00.000Z'));

const A100 = { cpu: '96', memory: '1000Gi', 'nvidia.com/gpu': '8' };
const FLEET: Fleet = {
  nodes: POOLS.map((name) => ({ name, count: SIZES[name], labels: { 'gpu-reflex.io/pool': name }, allocatable: A100 })),
  namespaces: [{ name: NAMESPACE }, { name: 'ml' }],
  pods: POOLS.flatMap((p) =>
    Array.from({ length: SIZES[p] }, (_, i) => ({
      name: `w-${p}-${i}`,
      namespace: 'ml',
      node: `${p}-${i}`,
      owner: { kind: 'Job' as const, name: `w-${p}-${i}` },
      requests: { 'nvidia.com/gpu': 2 },
    })),
  ),
};

const gpu = (i: number) => ({
  index: 0,
  uuid: `GPU-${String(i).padStart(8, '0')}-0000-4000-8000-000000000000`,
  pciBusId: '00000000:10:00.0',
  name: 'NVIDIA A100-SXM4-80GB',
});

/** Out of service, as the blast radius counts it: cordoned or carrying the remediation taint. */
const isOut = (n: Node) => n.spec?.unschedulable === true || (n.spec?.taints ?? []).some((x) => x.key === TAINT_KEY);

let stack: RemediationStack;

beforeAll(async () => {
  stack = await startRemediationStack({
    fleet: FLEET,
    clock,
    concurrency: CONCURRENCY,
    policy: { blastRadius: { maxShare: 1, maxCount: LIMIT, windowMinutes: 60 } },
  });
});
afterAll(async () => {
  await stack?.close();
});

describe('an XID storm delivered concurrently', () => {
  it(`never has more than ${LIMIT} nodes of a pool out at any moment; the rest wait for approval`, async () => {
    // Every write the functions make passes through the store: count each pool's nodes out after each one.
    const out = new Map<string, Set<string>>(POOLS.map((p) => [p, new Set()]));
    const most = new Map<string, number>(POOLS.map((p) => [p, 0]));
    const stop = stack.sim.store.subscribe((e) => {
      if (e.resource !== 'nodes') return;
      const n = e.object as Node;
      const pool = out.get(n.metadata.labels?.['gpu-reflex.io/pool'] ?? '');
      if (!pool) return;
      if (e.type !== 'DELETED' && isOut(n)) pool.add(n.metadata.name);
      else pool.delete(n.metadata.name);
      const name = n.metadata.labels!['gpu-reflex.io/pool']!;
      most.set(name, Math.max(most.get(name)!, pool.size));
    });
    // How many remediations run at once: each holds its node's Lease while it works.
    const holding = new Set<string>();
    let mostAtOnce = 0;
    const stopLeases = stack.sim.store.subscribe((e) => {
      if (e.resource !== 'leases.coordination.k8s.io') return;
      if (e.type !== 'DELETED' && (e.object.spec as { holderIdentity?: string } | undefined)?.holderIdentity)
        holding.add(e.object.metadata.name);
      else holding.delete(e.object.metadata.name);
      mostAtOnce = Math.max(mostAtOnce, holding.size);
    });

    // Every node of both pools fails at once.
    const failing = POOLS.flatMap((p) => Array.from({ length: SIZES[p] }, (_, i) => `${p}-${i}`));
    const events = failing.map((node, i) =>
      xidEvent(node, clock.now(), {
        gpu: gpu(i),
        xid: 79,
        via: 'nvml',
        pid: null,
        process: null,
        message: 'NVRM: Xid (PCI:0000:10:00): 79, GPU has fallen off the bus.',
        podUids: [],
      }),
    );
    await stack.send(events);
    await stack.advance(0);
    stop();
    stopLeases();

    expect(mostAtOnce).toBe(CONCURRENCY);

    for (const p of POOLS) expect({ pool: p, most: most.get(p) }).toEqual({ pool: p, most: LIMIT });
    const nodes = failing.map((n) => stack.sim.store.node(n)!);
    const acted = nodes.filter(isOut);
    const held = nodes.filter((n) => n.metadata.labels?.[STATE_LABEL] === 'awaiting-approval');
    expect(acted).toHaveLength(POOLS.length * LIMIT);
    expect(held).toHaveLength(failing.length - POOLS.length * LIMIT);
    expect(held.every((n) => !isOut(n))).toBe(true);
    // Each held-back node asked once for approval; every failing node reported once.
    const asked = stack.published(APPROVAL_REQUESTED).map((e) => (e.detail as { plan: { node: string } }).plan.node);
    expect(asked.sort()).toEqual(held.map((n) => n.metadata.name).sort());
    const reported = stack.published(REMEDIATION).map((e) => (e.detail as { target: { node: string } }).target.node);
    expect(reported.sort()).toEqual([...failing].sort());
  });
});
