/**
 * Approvals that resume (issue #10), on the embedded stack: an XID storm holds nodes back at the
 * blast-radius limit, each with an approval recorded in the store before its `Approval Requested`
 * is published. Then, through the real EventBridge SDK and the serverless.yml rule for
 * `Approval Decided`: a decider outside the policy's approvers is refused; an allowed approval acts
 * once, and a second decision for the same id changes nothing (the exactly-once guard in
 * functions/remediate/approve.ts); a rejection closes its approval and publishes nothing; the
 * last one expires when the virtual clock passes its TTL and the sweep reports it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APPROVAL_DECIDED, APPROVAL_REQUESTED, REMEDIATION, SOURCES } from '../../events/index.ts';
import { manualClock } from '../../functions/adapters/clock.ts';
import type { ApprovalRecord } from '../../functions/lib/approvals.ts';
import { STATE_LABEL } from '../../functions/remediate/core/state.ts';
import type { Fleet, Node } from '../../infra/local/kube/index.ts';
import { xidEvent, type OutgoingEvent } from '../../node-agent/events.ts';
import { approvalKey, sealDecision } from '../../functions/lib/approval-seal.ts';
import { E2E_APPROVAL_KEY, NAMESPACE, startRemediationStack, type RemediationStack } from './remediation-stack.ts';

const POOL = 'appr';
const SIZE = 6;
const FAILING = 4;
const TTL_MINUTES = 30;
const TAINT_KEY = 'gpu-reflex.io/unhealthy';

const clock = manualClock(Date.parse('2026-11-21T03:00:00.000Z'));

const A100 = { cpu: '96', memory: '1000Gi', 'nvidia.com/gpu': '8' };
const FLEET: Fleet = {
  nodes: [{ name: POOL, count: SIZE, labels: { 'gpu-reflex.io/pool': POOL }, allocatable: A100 }],
  namespaces: [{ name: NAMESPACE }, { name: 'ml' }],
  pods: Array.from({ length: SIZE }, (_, i) => ({
    name: `w-${i}`,
    namespace: 'ml',
    node: `${POOL}-${i}`,
    owner: { kind: 'Job' as const, name: `w-${i}` },
    requests: { 'nvidia.com/gpu': 2 },
  })),
};
const gpu = (i: number) => ({
  index: 0,
  uuid: `GPU-${String(i).padStart(8, '0')}-0000-4000-8000-000000000000`,
  pciBusId: '00000000:10:00.0',
  name: 'NVIDIA A100-SXM4-80GB',
});
const isOut = (n: Node) => n.spec?.unschedulable === true || (n.spec?.taints ?? []).some((x) => x.key === TAINT_KEY);

let stack: RemediationStack;
let seq = 0;

beforeAll(async () => {
  stack = await startRemediationStack({
    fleet: FLEET,
    clock,
    // One node of the pool may be out per two hours; only cli:alice may decide.
    policy: {
      blastRadius: { maxShare: 1, maxCount: 1, windowMinutes: 120 },
      approvals: { ttlMinutes: TTL_MINUTES, approvers: ['cli:alice'] },
    },
  });
});
afterAll(async () => {
  await stack?.close();
});

const KEY = approvalKey(E2E_APPROVAL_KEY, 'e2e');

/** A decision as chatops or `gpu-reflex approve` sends it (sealed); `forged` leaves the seal off, `source` puts it elsewhere. */
function decided(
  approvalId: string,
  decision: 'approved' | 'rejected',
  by: string,
  o: { forged?: boolean; source?: string } = {},
): OutgoingEvent {
  const detail = {
    schemaVersion: 1,
    eventId: `${approvalId}:decided:${seq++}`,
    occurredAt: new Date(clock.now()).toISOString(),
    approvalId,
    decision,
    decidedBy: { platform: 'cli' as const, id: by },
  };
  return {
    source: o.source ?? SOURCES.chatops,
    detailType: APPROVAL_DECIDED,
    detail: o.forged ? detail : sealDecision(KEY, detail),
    time: new Date(clock.now()),
    priority: 'normal',
  } as OutgoingEvent;
}

function approval(id: string): ApprovalRecord {
  const cm = stack.sim.store.get('configmaps', NAMESPACE, 'gpu-reflex-state-approvals') as
    { data?: Record<string, string> } | undefined;
  const raw = cm?.data?.[`approval.${id}`];
  expect(raw, `approval ${id} in the store`).toBeDefined();
  return JSON.parse(raw!) as ApprovalRecord;
}

const reportsFor = (node: string) =>
  stack.published(REMEDIATION).filter((e) => (e.detail as { target: { node: string } }).target.node === node);
const node = (name: string) => stack.sim.store.node(name)!;

describe('approvals that resume', () => {
  it('acts on an approved hold-back once, closes a rejected one, and expires the last', async () => {
    const failing = Array.from({ length: FAILING }, (_, i) => `${POOL}-${i}`);
    await stack.send(
      failing.map((n, i) =>
        xidEvent(n, clock.now(), {
          gpu: gpu(i),
          xid: 79,
          via: 'nvml',
          pid: null,
          process: null,
          message: 'NVRM: Xid 79, GPU has fallen off the bus.',
          podUids: [],
        }),
      ),
    );
    await stack.advance(0);

    const held = failing.filter((n) => node(n).metadata.labels?.[STATE_LABEL] === 'awaiting-approval');
    expect(held).toHaveLength(FAILING - 1);
    // Every published approval id is in the store, open, with the policy's TTL and approvers.
    const asked = new Map(
      stack
        .published(APPROVAL_REQUESTED)
        .map((e) => [
          (e.detail as { plan: { node: string } }).plan.node,
          (e.detail as { approvalId: string }).approvalId,
        ]),
    );
    expect([...asked.keys()].sort()).toEqual([...held].sort());
    for (const [n, id] of asked) {
      expect(approval(id)).toMatchObject({
        id,
        node: n,
        status: 'open',
        approvers: ['cli:alice'],
        expiresAt: new Date(clock.now() + TTL_MINUTES * 60_000).toISOString(),
      });
    }
    const [a, b, c] = held as [string, string, string];
    const [idA, idB, idC] = [asked.get(a)!, asked.get(b)!, asked.get(c)!];

    // Not on the approvers list: refused, nothing changes.
    const before = reportsFor(a).length;
    await stack.send([decided(idA, 'approved', 'mallory')]);
    await stack.advance(0);
    expect(approval(idA).status).toBe('open');
    expect(isOut(node(a))).toBe(false);

    // Forged (issue #29): the right shape and an allowed approver, but unsealed — anyone who may put
    // events on the bus (a node's agent key, any function's role) could send it; and a sealed one
    // under the agent's source, which no rule routes to remediate-approve. Nothing is approved.
    const refusals: unknown[] = [];
    const stopForged = stack.bus.on(
      'delivered',
      (d) => void (d.function === 'remediate-approve' && refusals.push(d.result)),
    );
    await stack.send([
      decided(idA, 'approved', 'alice', { forged: true }),
      decided(idA, 'approved', 'alice', { source: SOURCES.agent }),
    ]);
    await stack.advance(0);
    stopForged();
    expect(refusals).toEqual([
      {
        status: 'done',
        result: expect.objectContaining({ result: 'refused', message: expect.stringMatching(/^unsealed/) }),
      },
    ]);
    expect(approval(idA).status).toBe('open');
    expect(isOut(node(a))).toBe(false);

    // Approved: acted on at once, whatever the window says, and reported.
    await stack.send([decided(idA, 'approved', 'alice')]);
    await stack.advance(0);
    expect(approval(idA)).toMatchObject({ status: 'approved-applied', decidedBy: 'cli:alice' });
    expect(isOut(node(a))).toBe(true);
    const afterFirst = reportsFor(a).length;
    expect(afterFirst).toBe(before + 1);
    const stored = approval(idA);
    const nodeVersion = node(a).metadata.resourceVersion;

    // A second approval of the same id changes nothing and says so: no write, no report, the record as it was.
    const results: unknown[] = [];
    const stop = stack.bus.on('delivered', (d) => void (d.function === 'remediate-approve' && results.push(d.result)));
    await stack.send([decided(idA, 'approved', 'alice')]);
    await stack.advance(0);
    stop();
    expect(results).toEqual([
      { status: 'done', result: expect.objectContaining({ result: 'already-decided', status: 'approved-applied' }) },
    ]);
    expect(approval(idA)).toEqual(stored);
    expect(reportsFor(a)).toHaveLength(afterFirst);
    expect(node(a).metadata.resourceVersion).toBe(nodeVersion);

    // Rejected: closed, the incident left to a person, nothing published for it.
    const beforeB = reportsFor(b).length;
    await stack.send([decided(idB, 'rejected', 'alice')]);
    await stack.advance(0);
    expect(approval(idB).status).toBe('rejected');
    expect(isOut(node(b))).toBe(false);
    expect(reportsFor(b)).toHaveLength(beforeB);

    // Past the TTL the sweep closes the last one and reports it, once; its node stays held back.
    await stack.advance((TTL_MINUTES + 2) * 60_000);
    expect(approval(idC).status).toBe('expired');
    const expired = reportsFor(c).filter((e) =>
      String((e.detail as { reason: string }).reason).startsWith(`approval ${idC} expired`),
    );
    expect(expired).toHaveLength(1);
    expect((expired[0]!.detail as { phase: string }).phase).toBe('awaiting-approval');
    expect(node(c).metadata.labels?.[STATE_LABEL]).toBe('awaiting-approval');
    expect(isOut(node(c))).toBe(false);
    // Decided ones are not expired afterwards.
    expect(approval(idA).status).toBe('approved-applied');
    expect(approval(idB).status).toBe('rejected');
  });
});
