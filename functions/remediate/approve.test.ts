/**
 * remediate-approve's core (approve.ts) over the Kubernetes fakes: the approval recorded before it
 * is published, and each way a decision is refused or found no longer needed. The happy path and
 * exactly-once over the real stack: test/e2e/approvals.test.ts.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { APPROVAL_REQUESTED, REMEDIATION, type ApprovalDecidedDetail } from '../../events/index.ts';
import { RecordingPublisher, type PublishedEvent } from '../adapters/bus.ts';
import { manualClock, type ManualClock } from '../adapters/clock.ts';
import { TransientError } from '../adapters/errors.ts';
import { fakeKube, FakeDeviceTaintOps, type FakeKube } from '../adapters/kube/fake.ts';
import { approvalKey, sealDecision } from '../lib/approval-seal.ts';
import { getApproval } from '../lib/approvals.ts';
import { decideApproval } from './approve.ts';
import { DEFAULT_POLICY, type Policy } from './core/policy.ts';
import { HISTORY_ANNOTATION, STATE_LABEL } from './core/state.ts';
import { remediate, triggerOf, type RemediationDeps } from './run.ts';
import { sweepRound } from './sweep-jobs.ts';
import { fakeDeps, xid79 } from './testing.ts';

const T0 = Date.parse('2026-11-21T03:00:00.000Z');
const MIN = 60_000;
const POLICY: Policy = {
  ...DEFAULT_POLICY,
  blastRadius: { maxShare: 1, maxCount: 1, windowMinutes: 60 },
  approvals: { ttlMinutes: 120, approvers: [] },
};

const xid = xid79;
const KEY = approvalKey('k'.repeat(32), 'test');
const unsealed = (
  approvalId: string,
  d: ApprovalDecidedDetail['decision'],
  at: number,
  by = 'alice',
): ApprovalDecidedDetail => ({
  schemaVersion: 1,
  eventId: `${approvalId}:${d}`,
  occurredAt: new Date(at).toISOString(),
  approvalId,
  decision: d,
  decidedBy: { platform: 'cli', id: by },
});
const decision = (approvalId: string, d: ApprovalDecidedDetail['decision'], at: number): ApprovalDecidedDetail =>
  sealDecision(KEY, unsealed(approvalId, d, at));

let kube: FakeKube;
let clock: ManualClock;
let publisher: RecordingPublisher;
let deps: RemediationDeps;

beforeEach(() => {
  clock = manualClock(T0);
  kube = fakeKube({ clock });
  publisher = new RecordingPublisher();
  deps = fakeDeps(kube, { clock, publisher, policy: POLICY });
  for (const n of ['gpu-1', 'gpu-2', 'gpu-3'])
    kube.cluster.addNode({ name: n, labels: { 'gpu-reflex.io/pool': 'p' }, allocatable: { 'nvidia.com/gpu': '8' } });
});

/** gpu-1 is acted on, gpu-2 held back: returns gpu-2's approval id. */
async function holdBack(): Promise<string> {
  await remediate(triggerOf('GPU XID Error', xid('gpu-1', T0)), deps);
  await remediate(triggerOf('GPU XID Error', xid('gpu-2', T0)), deps);
  const asked = publisher.published.filter((e) => e.detailType === APPROVAL_REQUESTED);
  expect(asked).toHaveLength(1);
  return String(asked[0]!.detail.approvalId);
}

describe('decideApproval', () => {
  it("fences the approved GPU by its DeviceTaintRule in the approval's own patch on a DRA pool", async () => {
    deps.policy = { ...POLICY, fence: { ...POLICY.fence, backend: 'dra' } };
    deps.deviceTaints = new FakeDeviceTaintOps(kube.cluster);
    const fault = (node: string) => ({ ...xid(node, T0), xid: 48 });
    for (const n of ['gpu-1', 'gpu-2'])
      kube.cluster.draDevices.set(n, { [fault(n).gpu.uuid]: { driver: 'gpu.nvidia.com', pool: n, device: 'gpu-0' } });
    // XID 48 quarantines the GPU: gpu-1's takes the pool's one slot, gpu-2's waits for a person.
    await remediate(triggerOf('GPU XID Error', fault('gpu-1')), deps);
    await remediate(triggerOf('GPU XID Error', fault('gpu-2')), deps);
    const asked = publisher.published.filter((e) => e.detailType === APPROVAL_REQUESTED);
    expect(asked).toHaveLength(1);
    const rulesOf = (node: string) => [...kube.cluster.deviceTaintRules.values()].filter((r) => r.node === node);
    expect(rulesOf('gpu-1')).toHaveLength(1);
    expect(rulesOf('gpu-2')).toHaveLength(0);
    await decideApproval(decision(String(asked[0]!.detail.approvalId), 'approved', clock.now()), deps, KEY);
    // A new claim may not be given the faulty GPU in the minute until the next sweep.
    expect(rulesOf('gpu-2')).toHaveLength(1);
  });

  it('never publishes an approval id the store does not hold', async () => {
    const seen: (string | undefined)[] = [];
    deps.publisher = {
      async publish(events: readonly PublishedEvent[]) {
        for (const e of events)
          if (e.detailType === APPROVAL_REQUESTED)
            seen.push((await getApproval(kube.state, String(e.detail.approvalId)))?.status);
        await publisher.publish(events);
      },
    };
    await holdBack();
    expect(seen).toEqual(['open']);
  });

  it('keeps who approved when the bus refuses the report: approved-applied, the report left for the sweep', async () => {
    const id = await holdBack();
    const offered: PublishedEvent[] = [];
    deps.publisher = {
      async publish(events: readonly PublishedEvent[]) {
        offered.push(...events);
        throw new TransientError('PutEvents: the bus is unreachable');
      },
    };
    // Not the decision's failure: a retry of it would find the incident acted on and close it as no longer
    // needed, losing the approval's decider and status (approve.ts: the outbox is the sweep's to send).
    const out = await decideApproval(decision(id, 'approved', clock.now()), deps, KEY);
    expect(out).toMatchObject({ result: 'closed', status: 'approved-applied' });
    expect(await getApproval(kube.state, id)).toMatchObject({ status: 'approved-applied', decidedBy: 'cli:alice' });
    expect((await kube.nodes.get('gpu-2')).labels[STATE_LABEL]).toBe('draining');
    const report = offered.find((e) => e.detailType === REMEDIATION)!.detail.eventId;
    deps.publisher = publisher;
    await clock.advance(MIN);
    await sweepRound(deps);
    expect(publisher.published.filter((e) => e.detail.eventId === report)).toHaveLength(1);
  });

  it('closes it as no longer needed when the incident no longer waits (a person reset the node): no write, no report', async () => {
    const id = await holdBack();
    await kube.nodes.update('gpu-2', { labels: { [STATE_LABEL]: null }, annotations: { [HISTORY_ANNOTATION]: null } });
    const reports = publisher.published.filter((e) => e.detailType === REMEDIATION).length;
    const calls = kube.cluster.calls.length;
    const out = await decideApproval(decision(id, 'approved', clock.now()), deps, KEY);
    expect(out).toMatchObject({ result: 'closed', status: 'no-longer-needed' });
    expect(await getApproval(kube.state, id)).toMatchObject({ status: 'no-longer-needed', decidedBy: 'cli:alice' });
    expect(publisher.published.filter((e) => e.detailType === REMEDIATION)).toHaveLength(reports);
    expect(kube.cluster.calls.slice(calls).filter((c) => c.op.startsWith('nodes.') && c.op !== 'nodes.get')).toEqual(
      [],
    );
  });

  it('closes it as no longer needed when its node is gone (scaled in, replaced), and says so', async () => {
    const id = await holdBack();
    kube.cluster.nodes.delete('gpu-2');
    const out = await decideApproval(decision(id, 'approved', clock.now()), deps, KEY);
    expect(out).toMatchObject({ result: 'closed', status: 'no-longer-needed' });
    expect(out.message).toMatch(/^gpu-2 is gone/);
    expect(await getApproval(kube.state, id)).toMatchObject({ status: 'no-longer-needed', decidedBy: 'cli:alice' });
  });

  it('the sweep closes it as no longer needed when it acted on the incident itself (the pool has room now)', async () => {
    const id = await holdBack();
    // A person raised the limit: the next sweep finds room and goes ahead by itself.
    deps.policy = { ...POLICY, blastRadius: { ...POLICY.blastRadius, maxCount: 2 } };
    await clock.advance(MIN);
    expect((await sweepRound(deps)).expired).toEqual([]);
    expect((await kube.nodes.get('gpu-2')).labels[STATE_LABEL]).toBe('draining');
    expect(await getApproval(kube.state, id)).toMatchObject({ status: 'no-longer-needed' });
    expect(await decideApproval(decision(id, 'approved', clock.now()), deps, KEY)).toMatchObject({
      result: 'already-decided',
      status: 'no-longer-needed',
    });
  });

  it('refuses an unknown id, an "expired" decision, and a decision after the expiry, changing nothing', async () => {
    const id = await holdBack();
    expect(await decideApproval(decision('apr-unknown0', 'approved', clock.now()), deps, KEY)).toMatchObject({
      result: 'unknown',
    });
    expect(await decideApproval(decision(id, 'expired', clock.now()), deps, KEY)).toMatchObject({ result: 'refused' });
    await clock.advance(120 * MIN);
    expect(await decideApproval(decision(id, 'approved', clock.now()), deps, KEY)).toMatchObject({
      result: 'refused',
      message: expect.stringMatching(/^expired at 2026-11-21T05:00:00.000Z: too late/),
    });
    expect(await getApproval(kube.state, id)).toMatchObject({ status: 'open' });
    expect((await kube.nodes.get('gpu-2')).labels[STATE_LABEL]).toBe('awaiting-approval');
  });

  it.each([
    [
      'no seal (an agent key or a function role putting source gpu-reflex.chatops)',
      (id: string) => unsealed(id, 'approved', T0),
    ],
    [
      'a seal made with another key',
      (id: string) => sealDecision(approvalKey('m'.repeat(32), 'x'), unsealed(id, 'approved', T0)),
    ],
    [
      'a real seal with the approver changed',
      (id: string) => ({ ...decision(id, 'approved', T0), decidedBy: { platform: 'cli' as const, id: 'mallory' } }),
    ],
    [
      'a real rejection turned into an approval',
      (id: string) => ({ ...sealDecision(KEY, unsealed(id, 'rejected', T0)), decision: 'approved' as const }),
    ],
    [
      'a real seal for another approval',
      (id: string) => ({ ...decision('apr-other000', 'approved', T0), approvalId: id }),
    ],
  ])('refuses a forged decision (%s): nothing approved, nothing read, nothing written', async (_what, forge) => {
    const id = await holdBack();
    const calls = kube.cluster.calls.length;
    expect(await decideApproval(forge(id), deps, KEY)).toMatchObject({
      result: 'refused',
      message: expect.stringMatching(/^(unsealed|its seal does not match)/),
    });
    expect(kube.cluster.calls.slice(calls)).toEqual([]);
    expect(await getApproval(kube.state, id)).toMatchObject({ status: 'open' });
    expect((await kube.nodes.get('gpu-2')).labels[STATE_LABEL]).toBe('awaiting-approval');
  });

  it('refuses every decision, sealed or not, where the deployment has no approval key: it never approves everything', async () => {
    const id = await holdBack();
    expect(await decideApproval(decision(id, 'approved', clock.now()), deps, undefined)).toMatchObject({
      result: 'refused',
      message: expect.stringMatching(/no approval key \(GPU_REFLEX_APPROVAL_KEY_PARAMETER\)/),
    });
    expect(await getApproval(kube.state, id)).toMatchObject({ status: 'open' });
  });

  it('acts on a sealed decision with an empty approvers list (the sealer checked the role)', async () => {
    const id = await holdBack();
    expect(await decideApproval(decision(id, 'approved', clock.now()), deps, KEY)).toMatchObject({
      result: 'closed',
      status: 'approved-applied',
    });
    expect((await kube.nodes.get('gpu-2')).labels[STATE_LABEL]).toBe('draining');
  });
});

describe('decideApproval on a node ACK shares (cGPU)', () => {
  it("reads the gpushare ConfigMap before the approved fence: a card listed there before is another writer's", async () => {
    const listed = new Map<string, number[]>([['gpu-2', [0]]]);
    const changes: unknown[] = [];
    const shared: RemediationDeps = {
      ...deps,
      cardFences: {
        listed: async (n) => listed.get(n) ?? [],
        change: async (n, add, remove) => {
          changes.push([n, add, remove]);
          const now = (listed.get(n) ?? []).filter((c) => !remove.includes(c));
          listed.set(n, [...now, ...add.filter((c) => !now.includes(c))]);
          return true;
        },
      },
    };
    for (const n of ['gpu-1', 'gpu-2']) await kube.nodes.setLabels(n, { 'ack.node.gpu.schedule': 'cgpu' });
    const hw = (node: string) => ({ ...xid(node, T0), xid: 95, message: 'XID 95' });
    await remediate(triggerOf('GPU XID Error', hw('gpu-1')), shared);
    await remediate(triggerOf('GPU XID Error', hw('gpu-2')), shared);
    const asked = publisher.published.filter((e) => e.detailType === APPROVAL_REQUESTED);
    expect(asked).toHaveLength(1);
    const id = String(asked[0]!.detail.approvalId);
    expect(await decideApproval(decision(id, 'approved', clock.now()), shared, KEY)).toMatchObject({
      status: 'approved-applied',
    });
    const history = JSON.parse((await kube.nodes.get('gpu-2')).annotations[HISTORY_ANNOTATION]!) as {
      incidents: { fence?: { backend: string; listedBefore?: boolean } }[];
    };
    expect(history.incidents[0]!.fence).toMatchObject({ backend: 'ack-cgpu', listedBefore: true });
    expect(changes).toEqual([['gpu-1', [0], []]]);
  });
});
