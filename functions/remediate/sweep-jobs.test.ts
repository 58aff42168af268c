/**
 * The sweep's jobs and their leases (sweep-jobs.ts) over the Kubernetes fakes: the scheduled round runs
 * the node pass, then settles approvals, under `remediate-sweep`, one invocation at a time; an agent's
 * answer moves its node on under `remediate-repair-<node>` alone and leaves approvals to the round.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { APPROVAL_REQUESTED } from '../../events/index.ts';
import { RecordingPublisher } from '../adapters/bus.ts';
import { manualClock, type ManualClock } from '../adapters/clock.ts';
import { fakeKube, type FakeKube } from '../adapters/kube/fake.ts';
import { getApproval } from '../lib/approvals.ts';
import { DEFAULT_POLICY, type Policy } from './core/policy.ts';
import { STATE_LABEL } from './core/state.ts';
import { remediate, triggerOf, type RemediationDeps } from './run.ts';
import { sweepNode, sweepRound } from './sweep-jobs.ts';
import { fakeDeps, xid79 } from './testing.ts';
import { REMEDIATION } from '../../events/index.ts';

const T0 = Date.parse('2026-11-21T03:00:00.000Z');
const MIN = 60_000;
const POLICY: Policy = {
  ...DEFAULT_POLICY,
  blastRadius: { maxShare: 1, maxCount: 1, windowMinutes: 60 },
  approvals: { ttlMinutes: 120, approvers: [] },
};
const xid = xid79;

let kube: FakeKube;
let clock: ManualClock;
let publisher: RecordingPublisher;
let deps: RemediationDeps;

beforeEach(() => {
  clock = manualClock(T0);
  kube = fakeKube({ clock });
  publisher = new RecordingPublisher();
  deps = fakeDeps(kube, { clock, publisher, policy: POLICY });
  for (const n of ['gpu-1', 'gpu-2'])
    kube.cluster.addNode({ name: n, labels: { 'gpu-reflex.io/pool': 'p' }, allocatable: { 'nvidia.com/gpu': '8' } });
});

/** gpu-1 is acted on, gpu-2 held back (its approval open); then a person raises the limit: room for gpu-2. */
async function heldWithRoom(): Promise<string> {
  await remediate(triggerOf('GPU XID Error', xid('gpu-1', T0)), deps);
  await remediate(triggerOf('GPU XID Error', xid('gpu-2', T0)), deps);
  const id = String(publisher.published.find((e) => e.detailType === APPROVAL_REQUESTED)!.detail.approvalId);
  deps.policy = { ...POLICY, blastRadius: { ...POLICY.blastRadius, maxCount: 2 } };
  await clock.advance(MIN);
  return id;
}

const phaseOf = async (node: string) => (await kube.nodes.get(node)).labels[STATE_LABEL];

describe('the sweep jobs', () => {
  it('the scheduled round is one invocation at a time: while another holds remediate-sweep it does nothing', async () => {
    const id = await heldWithRoom();
    await kube.leases.tryAcquire('remediate-sweep', 'other', 120, clock);
    expect(await sweepRound(deps)).toEqual({ nodes: 0, plans: [], skipped: [], expired: [] });
    expect(await phaseOf('gpu-2')).toBe('awaiting-approval');
    expect(await getApproval(kube.state, id)).toMatchObject({ status: 'open' });
    await kube.leases.release('remediate-sweep', 'other');
    // The node pass acts on gpu-2, then, under the same lease, its approval is settled.
    expect((await sweepRound(deps)).nodes).toBe(2);
    expect(await phaseOf('gpu-2')).toBe('draining');
    expect(await getApproval(kube.state, id)).toMatchObject({ status: 'no-longer-needed' });
  });

  it("an agent's answer moves its node on under its own lease, beside a round, and leaves approvals to the round", async () => {
    const id = await heldWithRoom();
    await kube.leases.tryAcquire('remediate-repair-gpu-2', 'other', 120, clock);
    expect(await sweepNode(deps, 'gpu-2')).toEqual({ nodes: 0, plans: [], skipped: [], expired: [] });
    expect(await phaseOf('gpu-2')).toBe('awaiting-approval');
    await kube.leases.release('remediate-repair-gpu-2', 'other');
    await kube.leases.tryAcquire('remediate-sweep', 'other', 120, clock);
    const out = await sweepNode(deps, 'gpu-2');
    expect(out).toMatchObject({ nodes: 1, expired: [] });
    expect(await phaseOf('gpu-2')).toBe('draining');
    expect(await getApproval(kube.state, id)).toMatchObject({ status: 'open' });
  });

  it('closes the approval of a node that is gone (scaled in, replaced) as no longer needed, and the round goes on', async () => {
    await remediate(triggerOf('GPU XID Error', xid('gpu-1', T0)), deps);
    await remediate(triggerOf('GPU XID Error', xid('gpu-2', T0)), deps);
    const id = String(publisher.published.find((e) => e.detailType === APPROVAL_REQUESTED)!.detail.approvalId);
    kube.cluster.nodes.delete('gpu-2');
    await clock.advance(3 * 60 * MIN);
    const out = await sweepRound(deps);
    expect(out.expired).toEqual([]);
    expect(await getApproval(kube.state, id)).toMatchObject({ status: 'no-longer-needed' });
  });

  it('closes a replacement whose node name came back on another instance: the node replaced is gone, by identity', async () => {
    // ACK names nodes by private IP, which a new instance may reuse: a node of that name on another instance is not
    // the one replaced. Read by name alone, the record was dropped quietly and the incident's closing report lost.
    await kube.state.update('replace.gpu-3', () => ({
      node: 'gpu-3',
      incident: 'gpu-3/xid79',
      pool: 'np-a100',
      instanceId: 'i-old',
      since: T0,
      removeAt: T0,
    }));
    kube.cluster.addNode({ name: 'gpu-3', providerId: 'cn-hangzhou.i-new', allocatable: { 'nvidia.com/gpu': '8' } });
    deps.replacements = {
      facts: async () => ({}) as never,
      task: async (id) => ({ id, state: 'success' }) as never,
    };
    await sweepRound(deps);
    const reports = publisher.published.filter((e) => e.detailType === REMEDIATION);
    expect(reports.map((e) => e.detail.reason)).toEqual([expect.stringContaining('node gpu-3 is gone')]);
    expect(await kube.state.get('replace.gpu-3')).toBeUndefined();
  });

  it('a node deleted while the round runs (its replacement removed it) is skipped: the nodes after it are carried out', async () => {
    await heldWithRoom();
    // gpu-1 is listed, then gone before its plan is carried out (RemoveNodePoolNodes, a person, the autoscaler).
    const nodes = kube.nodes;
    deps.nodes = Object.assign(Object.create(nodes) as typeof nodes, {
      list: async (selector?: string) => {
        const listed = await nodes.list(selector);
        kube.cluster.nodes.delete('gpu-1');
        return listed;
      },
    });
    const out = await sweepRound(deps);
    expect(out.skipped).toEqual(['gpu-1']);
    expect(await phaseOf('gpu-2')).toBe('draining');
  });
});
