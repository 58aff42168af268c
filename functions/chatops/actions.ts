/**
 * The chat commands that run an automation's own core: `quarantine` through remediation's planner
 * and applier (remediate/run.ts), `mig apply` through the MIG rebalancer's round (mig/run.ts),
 * `quota show` / `quota rollback` through the quota rewriter (quota/run.ts). No second
 * implementation: chat only picks the ports (the dry-run ones for `--dry-run`) and words the outcome.
 */
import { GpuUuid, readMigInventory } from '../../events/index.ts';
import type { EventPublisher } from '../adapters/bus.ts';
import type { Notifier } from '../adapters/chat/notifier.ts';
import type { Clock } from '../adapters/clock.ts';
import { NotFoundError } from '../adapters/errors.ts';
import type { DryRunnable } from '../adapters/kube/dry-run.ts';
import type { NodeInfo } from '../adapters/kube/model.ts';
import type { Logger } from '../adapters/logger.ts';
import { planTable as migPlanTable } from '../mig/index.ts';
import { rebalanceMig, type MigRebalanceConfig } from '../mig/index.ts';
import type { QuotaConfig } from '../quota/index.ts';
import { HOLD_UNTIL_ANNOTATION, rollbackQuotas } from '../quota/index.ts';
import type { CloudPools } from '../adapters/alicloud/ports.ts';
import type { AutoscalePolicy } from '../lib/pool-policy.ts';
import {
  AUTOSCALE_APPROVALS_SHARD,
  closeApproval,
  getApproval,
  IDLE_APPROVALS_SHARD,
  MIG_APPROVALS_SHARD,
  recordApproval,
  type ApprovalRecord,
} from '../lib/approvals.ts';
import { approvalIdOf } from '../remediate/index.ts';
import { fnv1a } from '../lib/hash.ts';
import type { Policy } from '../remediate/index.ts';
import { OPERATOR_REQUEST } from '../remediate/index.ts';
import { remediate } from '../remediate/index.ts';
import { planMig } from '../mig/index.ts';
import { readMigFleet } from '../mig/index.ts';
import type { ChatUser } from './run.ts';

/** The ports one command runs on: the real ones, or the dry-run decorators around them. */
export interface CommandPorts {
  kube: DryRunnable;
  publisher: EventPublisher;
  notifier: Notifier;
  clock: Clock;
  logger: Logger;
  /** Lease holder: this command. */
  holder: string;
  /**
   * The ports above are the dry-run decorators (run.ts portsFor, the one place it is chosen): the
   * answers say "would", nothing else branches on it.
   */
  dryRun: boolean;
}

/** `3` or `GPU-…` on a node: its UUID (and index where known), or what is wrong in words. */
export function resolveGpu(node: NodeInfo, gpu: string): { uuid: string; index?: number } | string {
  const listed = readMigInventory(node.annotations).inventory?.gpus ?? [];
  const declared = Number(
    node.labels['nvidia.com/gpu.count'] ??
      node.capacity?.['nvidia.com/gpu'] ??
      node.allocatable['nvidia.com/gpu'] ??
      NaN,
  );
  const count = Number.isInteger(declared) ? declared : listed.length > 0 ? listed.length : undefined;
  if (count === 0) return `node ${node.name} has no GPU`;
  if (/^\d+$/.test(gpu)) {
    const index = Number(gpu);
    if (count !== undefined && index >= count)
      return `node ${node.name} has no GPU ${index}: it has ${count} (0–${count - 1})`;
    const found = listed.find((g) => g.index === index);
    return found
      ? { uuid: found.uuid, index }
      : `node ${node.name} does not list its GPUs' UUIDs (no gpu-reflex.io/mig-inventory): name GPU ${index} by its ` +
          `UUID (nvidia-smi -L)`;
  }
  if (!GpuUuid.safeParse(gpu).success) return `"${gpu}" is not a GPU UUID (GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)`;
  const found = listed.find((g) => g.uuid.toLowerCase() === gpu.toLowerCase());
  if (listed.length > 0 && !found)
    return `node ${node.name} has no GPU ${gpu} (it lists ${listed.map((g) => `${g.index}: ${g.uuid}`).join(', ')})`;
  return found ? { uuid: found.uuid, index: found.index } : { uuid: gpu };
}

/** Answers a usage error (bad node, bad GPU) with a string; carries a real quarantine out otherwise. */
export async function quarantine(
  p: CommandPorts,
  asked: { policy: Policy; who: ChatUser; node: string; gpu: string; usage: string },
): Promise<string> {
  const { policy, who, node: nodeName, gpu: gpuArg, usage } = asked;
  let node: NodeInfo;
  try {
    node = await p.kube.nodes.get(nodeName);
  } catch (err) {
    if (err instanceof NotFoundError) return `no node ${nodeName} in the cluster. Usage: ${usage}`;
    throw err;
  }
  const gpu = resolveGpu(node, gpuArg);
  if (typeof gpu === 'string') return `${gpu}. Usage: ${usage}`;
  const now = new Date(p.clock.now());
  const by = `${who.platform}:${who.id}`;
  const event = {
    detailType: OPERATOR_REQUEST,
    detail: {
      eventId: `chat:${by}:${nodeName}:${gpu.uuid.slice(4, 12)}:${now.getTime()}`
        .replace(/[^A-Za-z0-9._:-]/g, '-')
        .slice(0, 128),
      node: nodeName,
      observedAt: now.toISOString(),
      gpu,
      action: 'quarantine-gpu',
      by,
    },
  } as const;
  const { plan } = await remediate(event, {
    ...p.kube,
    publisher: p.publisher,
    notifier: p.notifier,
    policy,
    clock: p.clock,
    logger: p.logger,
    holder: p.holder,
  });
  const lead = p.dryRun ? 'dry run, nothing changed: ' : '';
  if (plan.kind === 'approval')
    return (
      `${lead}held back for approval (${approvalIdOf(plan)}): ${plan.approval?.summary ?? plan.reason}. An ` +
      `approver answers "approve ${approvalIdOf(plan)}"`
    );
  if (plan.kind === 'noop') return `${lead}nothing to do: ${plan.reason}`;
  return `${lead}${plan.reason}`;
}

/** One round of the MIG rebalancer, now: what it plans and what it started. */
export async function migApply(p: CommandPorts, mig: MigRebalanceConfig): Promise<string> {
  const dryRun = p.dryRun;
  if (!p.kube.migParted) return 'mig apply: this deployment has no mig-parted config wired (MIG_PARTED_CONFIGMAP)';
  const [nodes, pods] = await Promise.all([p.kube.nodes.list(), p.kube.pods.list()]);
  const fleet = readMigFleet(nodes, pods, undefined, { now: new Date(p.clock.now()), seconds: mig.minPendingSeconds });
  // The plan rebalanceMig carries out below: with its preemption policy.
  const table = migPlanTable(
    planMig(fleet.nodes, fleet.pending, mig.preemption ? { preemption: mig.preemption } : {}),
    fleet.notes,
  );
  const out = await rebalanceMig({
    ...p.kube,
    migParted: p.kube.migParted,
    publisher: p.publisher,
    notifier: p.notifier,
    clock: p.clock,
    logger: p.logger,
    holder: p.holder,
    mig,
  });
  const started = Object.entries(out.steps)
    .filter(([, s]) => s === 'start')
    .map(([n]) => n);
  const moved = Object.entries(out.steps)
    .filter(([, s]) => s !== 'start')
    .map(([n, s]) => `${n} ${s}`);
  const said = [
    started.length > 0
      ? `${dryRun ? 'dry run: would have started' : 'started'} the relayout of ${started.join(', ')} (mig-parted ` +
        `config written, node cordoned; rebalance-mig sets nvidia.com/mig.config after the sync and uncordons ` +
        `when mig-manager succeeds)`
      : `${dryRun ? 'dry run: ' : ''}no relayout started`,
    ...(moved.length > 0 ? [`moved on: ${moved.join(', ')}`] : []),
    ...(out.underWay.length > 0 && started.length === 0 ? [`under way: ${out.underWay.join(', ')}`] : []),
  ];
  return [...table, ...said].join('\n');
}

/** The gpu-reflex quotas as they are now, per team namespace, with any rollback hold. */
export async function quotaShow(p: CommandPorts, config: QuotaConfig): Promise<string> {
  const mine = (await p.kube.quotas.listQuotas())
    .filter((q) => q.name === config.quotaName)
    .sort((a, b) => a.namespace.localeCompare(b.namespace));
  const lines = config.teams.flatMap((t) =>
    t.namespaces.map((ns) => {
      const q = mine.find((x) => x.namespace === ns);
      if (!q) return `${ns} (${t.name}): no ResourceQuota ${config.quotaName} yet`;
      const hard = Object.entries(q.hard)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([k, v]) => `${k} ${v} (used ${q.used[k] ?? '0'})`);
      const hold = q.annotations?.[HOLD_UNTIL_ANNOTATION];
      return (
        `${ns} (${t.name}): ${hard.join(', ') || 'no limits'}` +
        `${hold && Date.parse(hold) > p.clock.now() ? `; held from rewrites until ${hold}` : ''}`
      );
    }),
  );
  return lines.join('\n');
}

export const ROLLBACK_HOLD_MINUTES = 60;

/** `quota rollback [NAMESPACE]`: the rewriter's own rollback, held from rewrites for an hour. */
export async function quotaRollback(
  p: CommandPorts,
  config: QuotaConfig,
  namespace: string | undefined,
): Promise<string> {
  const dryRun = p.dryRun;
  const r = await rollbackQuotas(
    { ...p.kube, publisher: p.publisher, notifier: p.notifier, clock: p.clock, logger: p.logger, config },
    namespace ? [namespace] : undefined,
    ROLLBACK_HOLD_MINUTES,
  );
  const values = (h: Record<string, string>) =>
    Object.entries(h)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([k, v]) => `${k} ${v}`)
      .join(', ') || 'none';
  const lines = [
    ...r.restored.flatMap((x) => [
      x.deleted
        ? `${dryRun ? 'would delete' : 'deleted'} ${x.namespace}'s quota (${values(x.from)}): gpu-reflex had ` +
          'created it; rewrite-quotas writes it again at its next round'
        : `${dryRun ? 'would roll back' : 'rolled back'} ${x.namespace}: ${values(x.from)} → ${values(x.to)}, held ` +
          `from rewrites for ${ROLLBACK_HOLD_MINUTES} min`,
      ...x.warnings.map((w) => `warning: ${x.namespace}: ${w}`),
    ]),
    ...r.refused.map((x) => `${x.namespace}: refused: ${x.why}`),
    ...r.skipped.map((x) => `${x.namespace}: ${x.why}`),
  ];
  return (dryRun ? ['dry run, nothing changed:', ...lines] : lines).join('\n') || 'no gpu-reflex quota to roll back';
}

/** Chat's own approvals (pool scales): a shard of their own, out of remediation's sweep's way. */
export const CHAT_APPROVALS_SHARD = 'chatops-approvals';

/** The autoscaler's pools and its cloud port, as autoscale-pools is wired (functions/autoscale/wiring.ts). */
export interface PoolPorts {
  policy: AutoscalePolicy;
  cloud: CloudPools;
}

/**
 * `pool scale POOL N`: an absolute desired size through the autoscaler's CloudPools port, within
 * the pool's min/max from the autoscale policy. A scale-out of more than the pool's `maxStep` (the
 * most the autoscaler itself adds at once) is costly: it is recorded as an approval and asked in
 * chat, not carried out.
 */
export async function poolScale(
  p: CommandPorts,
  asked: { pools: PoolPorts | undefined; approvalTtlMinutes: number; pool: string; size: number; usage: string },
): Promise<string> {
  const { pools, approvalTtlMinutes, pool: poolId, size, usage } = asked;
  const dryRun = p.dryRun;
  const bounds = pools?.policy.pools[poolId];
  if (!pools || !bounds)
    return (
      `node pool ${poolId} is not managed by gpu-reflex (AUTOSCALE_POLICY_FILE ` +
      `names ${Object.keys(pools?.policy.pools ?? {}).join(', ') || 'none'}). Usage: ${usage}`
    );
  if (size < bounds.min || size > bounds.max)
    return (
      `${poolId} may hold ${bounds.min}–${bounds.max} nodes (the autoscale policy): ${size} is outside. ` +
      `Usage: ${usage}`
    );
  const pool = (await pools.cloud.listNodePools()).find((x) => x.id === poolId);
  if (!pool) return `no node pool ${poolId} in the cluster. Usage: ${usage}`;
  const lead = dryRun ? 'dry run, nothing changed: ' : '';
  if (pool.desiredSize === size) return `${lead}${poolId} is already at ${size}: nothing to do`;
  if (size - pool.desiredSize > bounds.maxStep) {
    const now = new Date(p.clock.now());
    const id = `apr-${fnv1a(`pool/${poolId}@${pool.desiredSize}->${size}@${now.toISOString()}`)}`;
    const summary =
      `pool scale ${poolId} ${pool.desiredSize} → ${size} adds ${size - pool.desiredSize} nodes, more ` +
      `than its maxStep ${bounds.maxStep}: it needs approval`;
    await recordApproval(
      p.kube.state,
      {
        id,
        node: '',
        incident: `pool/${poolId}`,
        action: 'pool-scale',
        scope: 'pool',
        target: { gpus: [], pods: [] },
        requestedAt: now.toISOString(),
        expiresAt: new Date(now.getTime() + approvalTtlMinutes * 60_000).toISOString(),
        approvers: [],
        status: 'open',
        scale: { pool: poolId, from: pool.desiredSize, to: size },
      },
      CHAT_APPROVALS_SHARD,
    );
    await p.notifier.notify({
      title: `gpu-reflex: pool scale ${poolId}`,
      text: `${summary}. Answer "approve ${id}" or "deny ${id}" within ${approvalTtlMinutes} min`,
      severity: 'warning',
      approval: { id },
    });
    return `${lead}${summary}: held for approval ${id}; an operator answers "approve ${id}"`;
  }
  const { taskId } = await pools.cloud.setDesiredSize(poolId, size);
  return (
    `${lead}${dryRun ? 'would set' : 'set'} ${poolId}'s desired size ${pool.desiredSize} ` +
    `→ ${size}${dryRun ? '' : ` (task ${taskId})`}`
  );
}

/**
 * `approve`/`deny` of a plan a scheduled function holds for a person — a preempting MIG relayout
 * (rebalance-mig) or a costly scale-out (autoscale-pools): closed once here; that function's next
 * round carries an approved one out while its plan is still the same. `decided` is true only for
 * the click that closed it. Undefined: no such held plan.
 */
export async function decideHeldPlan(
  p: CommandPorts,
  id: string,
  decision: 'approved' | 'rejected',
  by: string,
): Promise<{ answer: string; decided: boolean } | undefined> {
  const mig = await getApproval(p.kube.state, id, MIG_APPROVALS_SHARD);
  const pool = mig?.mig ? undefined : await getApproval(p.kube.state, id, AUTOSCALE_APPROVALS_SHARD);
  // An idle pod's eviction (idle-gpus, evict.approvalMinutes): carried out at its next window.
  const idle = mig?.mig || pool?.scale ? undefined : await getApproval(p.kube.state, id, IDLE_APPROVALS_SHARD);
  const shard = mig?.mig ? MIG_APPROVALS_SHARD : pool?.scale ? AUTOSCALE_APPROVALS_SHARD : IDLE_APPROVALS_SHARD;
  const rec = mig?.mig ? mig : pool?.scale ? pool : idle?.idle ? idle : undefined;
  if (!rec) return undefined;
  const what = rec.idle
    ? {
        yes: `idle-gpus evicts ${rec.idle.pod} (idle on ${rec.node}) at its next window, if still idle`,
        no: `${rec.idle.pod} keeps its GPU; not asked again for this idle run`,
        late: `${rec.idle.pod} is not evicted`,
      }
    : rec.mig
      ? {
          yes:
            `rebalance-mig preempts ${rec.mig.preempts.join(', ')} and relays ${rec.node} ` +
            `GPU${rec.mig.gpus.length === 1 ? '' : 's'} ${rec.mig.gpus.join(', ')} at its next round`,
          no:
            `${rec.mig.preempts.join(', ')} keep ${rec.node} ` +
            `GPU${rec.mig.gpus.length === 1 ? '' : 's'} ${rec.mig.gpus.join(', ')}; not asked again while ` +
            `they hold them`,
          late: `${rec.mig.preempts.join(', ')} keep their GPUs`,
        }
      : {
          yes:
            `autoscale-pools grows ${rec.scale!.pool} ${rec.scale!.from} → ${rec.scale!.to} at its next round, if ` +
            `its plan is still that`,
          no: `${rec.scale!.pool} is not grown to ${rec.scale!.to}; that plan is not asked about again`,
          late: `${rec.scale!.pool} is not grown to ${rec.scale!.to}`,
        };
  const now = new Date(p.clock.now());
  if (rec.status !== 'open')
    return {
      answer: `${id} is already ${rec.status}${rec.decidedBy ? ` by ${rec.decidedBy}` : ''}: nothing more done`,
      decided: false,
    };
  if (now.getTime() >= Date.parse(rec.expiresAt)) {
    await closeApproval(p.kube.state, id, 'expired', { at: now, note: 'expired undecided' }, shard);
    return { answer: `${id} expired at ${rec.expiresAt}: too late, nothing done (${what.late})`, decided: false };
  }
  const closed = await closeApproval(
    p.kube.state,
    id,
    decision === 'approved' ? 'approved-applied' : 'rejected',
    { decidedBy: by, at: now },
    shard,
  );
  if (!closed.closed)
    return { answer: `${id} is already ${closed.record?.status ?? 'gone'}: nothing more done`, decided: false };
  return {
    answer: decision === 'approved' ? `approved ${id}: ${what.yes}` : `rejected ${id}: ${what.no}`,
    decided: true,
  };
}

/**
 * `approve`/`deny` of a held pool scale: closed once, then carried out; a second click finds it
 * closed. `decided` is true only for the click that closed it.
 */
export async function decidePoolScale(
  p: CommandPorts,
  pools: PoolPorts | undefined,
  id: string,
  decision: 'approved' | 'rejected',
  by: string,
): Promise<{ answer: string; decided: boolean } | undefined> {
  const rec = await getApproval(p.kube.state, id, CHAT_APPROVALS_SHARD);
  if (!rec?.scale) return undefined;
  const answer = await decideScale(p, pools, id, { ...rec, scale: rec.scale }, decision, by);
  return typeof answer === 'string' ? { answer, decided: false } : answer;
}

async function decideScale(
  p: CommandPorts,
  pools: PoolPorts | undefined,
  id: string,
  rec: ApprovalRecord & { scale: NonNullable<ApprovalRecord['scale']> },
  decision: 'approved' | 'rejected',
  by: string,
): Promise<string | { answer: string; decided: true }> {
  const now = new Date(p.clock.now());
  if (rec.status !== 'open')
    return `${id} is already ${rec.status}${rec.decidedBy ? ` by ${rec.decidedBy}` : ''}: nothing more done`;
  if (now.getTime() >= Date.parse(rec.expiresAt)) {
    await closeApproval(p.kube.state, id, 'expired', { at: now, note: 'expired undecided' }, CHAT_APPROVALS_SHARD);
    return `${id} expired at ${rec.expiresAt}: too late, nothing done (ask again with pool scale)`;
  }
  const { pool, from, to } = rec.scale;
  const closed = await closeApproval(
    p.kube.state,
    id,
    decision === 'approved' ? 'approved-applied' : 'rejected',
    { decidedBy: by, at: now },
    CHAT_APPROVALS_SHARD,
  );
  if (!closed.closed) return `${id} is already ${closed.record?.status ?? 'gone'}: nothing more done`;
  if (decision === 'rejected') return { answer: `rejected ${id}: ${pool} stays as it is`, decided: true };
  if (!pools)
    return {
      answer: `approved ${id}, but this deployment has no cloud wired (AUTOSCALE_POLICY_FILE): nothing done`,
      decided: true,
    };
  const { taskId } = await pools.cloud.setDesiredSize(pool, to);
  return { answer: `approved ${id}: set ${pool}'s desired size ${from} → ${to} (task ${taskId})`, decided: true };
}
