/**
 * The answers of the commands that act on the cluster through the shared ports directly (cordon, drain, the quota
 * and MIG plans, an approval's decision): one function each, so `runChat` (run.ts) is the command's authorisation,
 * its dispatch and its record, and each command reads whole in one place. `ports` are the command's own: the
 * dry-run decorators under `--dry-run` (run.ts portsFor), so each answer says "would" where it only pretends.
 */
import { APPROVAL_DECIDED, SCHEMA_VERSION, SOURCES, type ApprovalDecidedDetail } from '../../events/index.ts';
import { drainOnce } from '../adapters/kube/drain.ts';
import { APPROVAL_KEY_PARAMETER_ENV, sealDecision, type ApprovalKey } from '../lib/approval-seal.ts';
import { AUTOSCALE_APPROVALS_SHARD, getApproval, MIG_APPROVALS_SHARD } from '../lib/approvals.ts';
import { planMig, planTable as migPlanTable, readMigFleet, type MigRebalanceConfig } from '../mig/index.ts';
import { planQuotas, quotaFacts, type QuotaConfig } from '../quota/index.ts';
import {
  CHAT_APPROVALS_SHARD,
  decideHeldPlan,
  decidePoolScale,
  migApply,
  quotaRollback,
  quotaShow,
  type CommandPorts,
  type PoolPorts,
} from './actions.ts';
import type { ChatCommand } from './core/command.ts';
import type { DryRunnable } from '../adapters/kube/dry-run.ts';
import { requestsGpu } from '../adapters/kube/model.ts';
import { listApprovals } from '../lib/approvals.ts';
import { STATE_LABEL } from '../lib/node-state.ts';
import { fenceWords, heldNodes, type HeldNode } from '../remediate/index.ts';

type Named<N extends ChatCommand['name']> = Extract<ChatCommand, { name: N }>;

/** Who a command runs for, as the chat platform named them. */
export interface Asker {
  platform: NonNullable<ApprovalDecidedDetail['decidedBy']>['platform'];
  id: string;
  name?: string;
}

export async function cordonAnswer(ports: CommandPorts, c: Named<'cordon' | 'uncordon' | 'drain'>): Promise<string> {
  const changed = c.name === 'cordon' ? await ports.kube.nodes.cordon(c.node) : await ports.kube.nodes.uncordon(c.node);
  const verb = c.name === 'cordon' ? 'cordoned' : 'uncordoned';
  return c.dryRun
    ? `dry run: would ` +
        `have ${changed ? verb : `left ${c.node} as it is (already ${verb})`}${changed ? ` ${c.node}` : ''}`
    : changed
      ? `${verb} ${c.node}`
      : `${c.node} was already ${verb}`;
}

/** One pass, as `kubectl drain` does per attempt; blocked pods are said, a second drain retries them. */
export async function drainAnswer(ports: CommandPorts, c: Named<'cordon' | 'uncordon' | 'drain'>): Promise<string> {
  const r = await drainOnce(ports.kube, c.node);
  const pods = (xs: string[]) => xs.slice(0, 5).join(', ') + (xs.length > 5 ? ` and ${xs.length - 5} more` : '');
  const parts = [
    r.evicted.length > 0
      ? `${c.dryRun ? 'would evict' : 'evicting'} ${r.evicted.length} pod(s) (${pods(r.evicted)})`
      : 'no pod to evict',
    ...(r.blocked.length > 0
      ? [
          `${r.blocked.length} blocked for now ` +
            `(${pods(r.blocked.map((b) => b.pod))}: ${r.blocked[0]!.reason}); ` +
            `drain again to retry`,
        ]
      : []),
    ...(r.skipped.length > 0 ? [`${r.skipped.length} DaemonSet/mirror pod(s) left`] : []),
  ];
  return (
    `${c.dryRun ? 'dry run: would have cordoned and drained' : 'cordoned and draining'} ${c.node}: ` +
    `${parts.join('; ')}`
  );
}

export async function quotaAnswer(
  ports: CommandPorts,
  quota: QuotaConfig | undefined,
  c: Named<'quota'>,
): Promise<string> {
  if (!quota)
    return (
      'no teams are configured here (QUOTA_CONFIG_FILE): there are no quotas ' +
      `to ${c.sub === 'plan' ? 'plan' : c.sub}`
    );
  if (c.sub === 'show') return quotaShow(ports, quota);
  if (c.sub === 'rollback') return quotaRollback(ports, quota, c.namespace);
  const kube = ports.kube;
  const [nodes, pods, quotas] = await Promise.all([kube.nodes.list(), kube.pods.list(), kube.quotas.listQuotas()]);
  const plan = planQuotas(quota, quotaFacts(quota, nodes, pods, quotas));
  const lines = plan.namespaces.flatMap((n) =>
    n.changes.map((ch) => `${n.namespace}: ${ch.key} ${ch.from ?? 'unset'} → ${ch.to}`),
  );
  return [
    lines.length > 0
      ? `rewrite-quotas would change ${lines.length} quota value(s):`
      : 'every team quota is as rewrite-quotas would write it',
    ...lines,
    ...plan.warnings.map((w) => `warning: ${w}`),
  ].join('\n');
}

export async function migAnswer(ports: CommandPorts, mig: MigRebalanceConfig, c: Named<'mig'>): Promise<string> {
  if (c.sub === 'apply') return migApply(ports, mig);
  const [nodes, pods] = await Promise.all([ports.kube.nodes.list(), ports.kube.pods.list()]);
  // Judged fresh against now, as rebalance-mig does: an agent that stopped confirming its inventory is unknown.
  const fleet = readMigFleet(nodes, pods, undefined, undefined, undefined, new Date(ports.clock.now()));
  // As rebalance-mig would plan: with its preemption policy.
  return migPlanTable(
    planMig(fleet.nodes, fleet.pending, mig.preemption ? { preemption: mig.preemption } : {}),
    fleet.notes,
  ).join('\n');
}

export interface Decided {
  answer: string;
  decided?: { id: string; decision: 'approved' | 'rejected' };
}

/**
 * `approve`/`deny`. The store says whether there is anything left to decide; remediate-approve's own exactly-once
 * guard still decides two clicks that both found it open. A pool scale is chat's own approval: decided and carried
 * out here, once. A plan a scheduled function holds (a preempting MIG relayout, a costly scale-out): decided here,
 * carried out by that function's next round. A remediation's: an `Approval Decided`, sealed.
 */
export async function approvalAnswer(
  ports: CommandPorts,
  opts: {
    pools: PoolPorts | undefined;
    approvalKey: (() => Promise<ApprovalKey | undefined>) | undefined;
    who: Asker;
    now: number;
  },
  c: Named<'approve' | 'deny'>,
): Promise<Decided> {
  const { who, now } = opts;
  const kube = ports.kube;
  const decision = c.name === 'approve' ? 'approved' : 'rejected';
  const done = (answer: string, decided: boolean | undefined): Decided =>
    decided ? { answer, decided: { id: c.id, decision } } : { answer };
  const held = c.dryRun ? undefined : await decideHeldPlan(ports, c.id, decision, `${who.platform}:${who.id}`);
  if (held) return done(held.answer, held.decided);
  const pool = c.dryRun
    ? undefined
    : await decidePoolScale(ports, opts.pools, c.id, decision, `${who.platform}:${who.id}`);
  if (pool) return done(pool.answer, pool.decided);
  const rec =
    (await getApproval(kube.state, c.id)) ??
    (await getApproval(kube.state, c.id, CHAT_APPROVALS_SHARD)) ??
    (await getApproval(kube.state, c.id, MIG_APPROVALS_SHARD)) ??
    (await getApproval(kube.state, c.id, AUTOSCALE_APPROVALS_SHARD));
  if (!rec) return done(`no approval ${c.id} is waiting (unknown id): nothing done`, false);
  if (rec.status !== 'open')
    return done(
      `${c.id} is already ${rec.status}${rec.decidedBy ? ` by ${rec.decidedBy}` : ''}: nothing more done`,
      false,
    );
  if (now >= Date.parse(rec.expiresAt))
    return done(
      `${c.id} expired at ${rec.expiresAt}: too late, nothing done (${rec.action} on ${rec.node} stays held back)`,
      false,
    );
  if (c.dryRun)
    return done(
      `dry run: would have ${decision} ${c.id} ` +
        `(${rec.scale ? `${rec.scale.pool} ${rec.scale.from} → ${rec.scale.to}` : `${rec.action} on ${rec.node}`})`,
      false,
    );
  // remediate-approve believes only a sealed decision (lib/approval-seal.ts); the role was checked before.
  const key = await opts.approvalKey?.();
  if (!key)
    return done(
      `cannot decide ${c.id}: this deployment has no approval key (${APPROVAL_KEY_PARAMETER_ENV}), and ` +
        `remediate-approve refuses a decision it cannot prove; nothing done`,
      false,
    );
  const detail: ApprovalDecidedDetail = {
    schemaVersion: SCHEMA_VERSION,
    eventId: `decision:${c.id}:${who.platform}:${who.id}:${now}`.slice(0, 128),
    occurredAt: new Date(now).toISOString(),
    approvalId: c.id,
    decision,
    decidedBy: {
      platform: who.platform,
      id: who.id.slice(0, 128),
      ...(who.name ? { name: who.name.slice(0, 128) } : {}),
    },
  };
  await ports.publisher.publish([
    { source: SOURCES.chatops, detailType: APPROVAL_DECIDED, detail: sealDecision(key, detail) },
  ]);
  return done(
    `${decision} ${c.id} (${rec.action} on ${rec.node}): ` +
      `remediate-approve ${decision === 'approved' ? 'carries it out' : 'closes it'}, once however often it is clicked`,
    true,
  );
}

/** `status` (one node) or `status` (the fleet: counts, then each held node). */
export async function statusAnswer(kube: DryRunnable, node: string | undefined): Promise<string> {
  if (node) {
    const n = await kube.nodes.get(node);
    const gpus = n.allocatable['nvidia.com/gpu'];
    return (
      `${n.name}: ${readiness(n)}${n.unschedulable ? ', cordoned' : ''}; gpu-reflex ` +
      `state ${n.labels[STATE_LABEL] ?? 'healthy'}` +
      (n.taints.length > 0
        ? '; taints ' + n.taints.map((t) => `${t.key}${t.value ? `=${t.value}` : ''}:${t.effect}`).join(', ')
        : '') +
      (gpus ? `; ${gpus} GPUs allocatable` : '')
    );
  }
  const [nodes, pods, approvals] = await Promise.all([kube.nodes.list(), kube.pods.list(), listApprovals(kube.state)]);
  const byState = new Map<string, number>();
  for (const n of nodes)
    byState.set(n.labels[STATE_LABEL] ?? 'healthy', (byState.get(n.labels[STATE_LABEL] ?? 'healthy') ?? 0) + 1);
  const pending = pods.filter((p) => p.phase === 'Pending' && !p.nodeName && requestsGpu(p)).length;
  // The counts are gpu-reflex's states, which a node that stopped reporting keeps: a node not Ready (or whose
  // readiness is unknown) is named beside them, or it reads as one more "healthy".
  const notReady = nodes
    .filter((n) => n.ready !== true)
    .sort((a, b) => a.name.localeCompare(b.name))
    .map((n) => `${n.name}${n.ready === undefined ? ' (no Ready condition)' : ''}`);
  const counts =
    `${nodes.length} nodes ` +
    `(${[...byState].map(([s, k]) => `${k} ${s}`).join(', ')}), ${nodes.filter((n) => n.unschedulable).length} ` +
    `cordoned; ` +
    (notReady.length > 0
      ? `not Ready: ${notReady.slice(0, HELD_IN_CHAT).join(', ')}` +
        `${notReady.length > HELD_IN_CHAT ? ` and ${notReady.length - HELD_IN_CHAT} more` : ''}; `
      : '') +
    `${pending} GPU pod${pending === 1 ? '' : 's'} pending`;
  return [counts, ...heldLines(heldNodes(nodes, approvals))].join('\n');
}

/**
 * A node's readiness as kubectl words it: Ready, NotReady (its Ready condition False, or Unknown once the kubelet
 * stopped posting status), and unknown where it has no Ready condition at all — kubectl prints `Unknown` there
 * (kubernetes/kubernetes pkg/printers/internalversion/printers.go, printNode), never Ready.
 */
function readiness(n: { ready: boolean | undefined }): string {
  return n.ready === true ? 'Ready' : n.ready === false ? 'NotReady' : 'Ready unknown (no Ready condition)';
}

/** At most this many held nodes in one chat answer; the rest are counted and `gpu-reflex status` named. */
export const HELD_IN_CHAT = 10;

/** Each held node in one line of words: state, what and why, the fence, the approval to decide. */
function heldLines(held: readonly HeldNode[]): string[] {
  const lines = held.slice(0, HELD_IN_CHAT).map((h) => {
    const what = h.incidents.map((i) => {
      const fence = fenceWords(i.fence);
      return `${i.gpu ?? 'node'} ${i.why} since ${i.since}${fence ? `, fence ${fence}` : ''}`;
    });
    const ask = h.approvals.map((a) => `approve ${a.id} (${a.action}, expires ${a.expiresAt})`);
    return (
      `• ${h.node}: ${h.state}${h.cordoned ? ', cordoned' : ''}` +
      (what.length > 0 ? `; ${what.join('; ')}` : '') +
      (ask.length > 0 ? `; waiting for ${ask.join(' or ')}` : '')
    );
  });
  if (held.length > HELD_IN_CHAT)
    lines.push(`and ${held.length - HELD_IN_CHAT} more held nodes: gpu-reflex status --kubeconfig F lists all`);
  return lines;
}
