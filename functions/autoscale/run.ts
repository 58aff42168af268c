/**
 * The pool autoscaler, every minute (`autoscale-pools`), on the reflex skeleton:
 *
 *   lease → follow up earlier requests (their ACK task ended: GPU Pool Scaled succeeded/failed)
 *   → gather facts (node pools from ACK, nodes and pending GPU pods from Kubernetes, prices from
 *   ECS) → plan (core/planner.ts, pure) → for each pool to grow: record the intent in the state
 *   ConfigMap, set the pool's desired size (absolute: a retry cannot grow it twice), record the
 *   request with its event and notice (the outbox), publish, clear → report.
 *
 * Only pools the policy names are touched; a pool whose own ACK autoscaler is on is left to it.
 * A pool remediation is replacing a node of (its `replace.<node>` records, remediate/replacements.ts)
 * gives no node back meanwhile, and its nodes' idle time starts over once the replacement is done:
 * the new node is the broken one's capacity, not demand that went away. Remediation sets sizes
 * under the same Lease (POOL_SIZE_LEASE), so the two never write over each other's size.
 */
import { GPU_POOL_SCALED, SCHEMA_VERSION, SOURCES, type GpuPoolScaledDetail } from '../../events/index.ts';
import { NODEPOOL_LABEL, type CloudPools, type NodePool } from '../adapters/alicloud/ports.ts';
import type { EventPublisher, PublishedEvent } from '../adapters/bus.ts';
import type { Notice, Notifier } from '../adapters/chat/notifier.ts';
import type { Clock } from '../adapters/clock.ts';
import type { NodeInfo, PodInfo } from '../adapters/kube/model.ts';
import type { GangObjectOps, LeaseOps, NodeOps, PodOps, StateStore } from '../adapters/kube/ports.ts';
import { parseQuantity } from '../adapters/kube/quantity.ts';
import { toTaint } from '../adapters/kube/convert.ts';
import type { Logger } from '../adapters/logger.ts';
import { flushStoreOutbox, recordWithOutbox, type PendingNotice } from '../lib/outbox.ts';
import { withLease } from '../lib/reflex.ts';
import { type Increment, type PendingPod, type PoolState, type ScaleOutPlan } from './core/planner.ts';
import { planScaleIn } from './core/scale-in.ts';
import { ACK_GPU_MODE_LABEL, cardsOfNode, gpuLabels, gpuOffer, wellKnownLabels } from './core/template.ts';
import {
  countNotDemand,
  gangOfPod,
  kueueWorkloadSpec,
  notDemand,
  podGroupSpec,
  type GangSpec,
  type NotDemand,
} from './demand.ts';
import { planWithGangs, type Gang } from './core/gangs.ts';
import { drainCounts, whyBlocks } from './drainable.ts';
import { withoutRoomOnExisting } from './existing-room.ts';
import { spreadKeyOf } from './anti-affinity.ts';
import { instanceIdOf } from '../adapters/alicloud/repair.ts';
import { BadInputError } from '../adapters/errors.ts';
import { holdsDevices, MIRROR_POD_ANNOTATION, requestsGpu } from '../adapters/kube/model.ts';
import { DEFAULT_TAINT_KEY, STATE_LABEL } from '../lib/node-state.ts';
import { replacementsByPool, type ReplacementRecord } from '../lib/replacements.ts';
import type { AutoscalePolicy } from '../lib/pool-policy.ts';
import { AUTOSCALE_APPROVALS_SHARD, closeApproval, getApproval, recordApproval } from '../lib/approvals.ts';
import { fnv1a } from '../lib/hash.ts';
import type { TrackedNode } from './core/maintenance.ts';
import { maintainPools, type MaintenanceBook, type MaintenanceOutcome } from './maintenance.ts';

/** The approval id of a scale-out: the cluster, the pool and the sizes (the same plan asks once). */
export const scaleOutApprovalId = (clusterId: string, pool: string, from: number, to: number) =>
  `apr-pool-${fnv1a(`${clusterId}/${pool}:${from}->${to}`)}`;

/**
 * With the policy's `approval` set, a scale-out adding more than its hourly cost goes ahead only
 * once approved in chat: the first round asks (a notice with the approval id) and records it,
 * later rounds wait; approved, the next round carries it out; denied or expired, that plan is not
 * carried out nor asked about again (a different size is a new request). True while it is held.
 */
async function heldForApproval(
  deps: AutoscaleDeps,
  pool: NodePool,
  inc: Increment,
  reason: string,
  now: number,
): Promise<boolean> {
  const approval = deps.policy.approval;
  if (!approval || inc.hourlyCost <= approval.aboveHourlyCost) return false;
  const id = scaleOutApprovalId(deps.clusterId, pool.id, inc.from, inc.to);
  const rec = await getApproval(deps.state, id, AUTOSCALE_APPROVALS_SHARD);
  if (rec?.status === 'approved-applied') return false;
  if (rec?.status === 'open' && now >= Date.parse(rec.expiresAt))
    await closeApproval(
      deps.state,
      id,
      'expired',
      { at: new Date(now), note: 'expired undecided' },
      AUTOSCALE_APPROVALS_SHARD,
    );
  if (rec) {
    deps.logger.info('autoscale-pools: scale-out waits for approval', {
      pool: pool.id,
      from: inc.from,
      to: inc.to,
      approval: id,
      status: rec.status,
    });
    return true;
  }
  // Told first, then recorded: a notice that fails is asked again next round, never lost.
  await deps.notifier.notify({
    title: `gpu-reflex: approve growing node pool ${pool.name} ${inc.from} → ${inc.to} (+${inc.hourlyCost}/h)?`,
    text: (
      `${reason}. It adds ${inc.hourlyCost}/h, above the ${approval.aboveHourlyCost}/h the policy lets the ` +
      `autoscaler spend alone. Answer "approve ${id}" or "deny ${id}" within ${approval.ttlMinutes} min`
    ).slice(0, 1500),
    severity: 'warning',
    approval: { id },
  });
  await recordApproval(
    deps.state,
    {
      id,
      node: '',
      incident: `pool/${pool.id}`,
      action: 'pool-scale-out',
      scope: 'pool',
      target: { gpus: [], pods: inc.pods.slice(0, 50) },
      requestedAt: new Date(now).toISOString(),
      expiresAt: new Date(now + approval.ttlMinutes * 60_000).toISOString(),
      approvers: [],
      status: 'open',
      scale: { pool: pool.id, from: inc.from, to: inc.to },
    },
    AUTOSCALE_APPROVALS_SHARD,
  );
  deps.logger.info('autoscale-pools: scale-out asked for approval', {
    pool: pool.id,
    from: inc.from,
    to: inc.to,
    approval: id,
    hourlyCost: inc.hourlyCost,
  });
  return true;
}

/** ACK's label on every node of a node pool. */
export { NODEPOOL_LABEL };
/** ACK's GPU mode of a pool's nodes (core/template.ts): `default` is exclusive, `cgpu`/`share`/`core_mem` share. */
export const GPU_SHARE_LABEL = ACK_GPU_MODE_LABEL;
const GiB = 2 ** 30;

export interface AutoscaleDeps {
  nodes: Pick<NodeOps, 'list' | 'cordon' | 'uncordon'>;
  pods: Pick<PodOps, 'list' | 'evict'>;
  leases: LeaseOps;
  state: StateStore;
  cloud: CloudPools;
  publisher: EventPublisher;
  notifier: Notifier;
  clock: Clock;
  logger: Logger;
  holder: string;
  policy: AutoscalePolicy;
  clusterId: string;
  /**
   * The gangs' own minimums (issue #34): Volcano PodGroups' `minMember`/`minResources`, Kueue
   * Workloads' pod-set counts (demand.ts). Unset, or a gang with no object: every waiting pod of a
   * gang is bought for (the cautious side: the gang surely starts).
   */
  gangs?: GangObjectOps;
}

export interface AutoscaleOutcome {
  /** Pools grown this round: id → new desired size. */
  scaled: Record<string, number>;
  /** Scale-outs waiting for approval in chat (the policy's `approval`): id → the size asked for. */
  held: Record<string, number>;
  /** Earlier requests whose ACK task ended this round: pool → succeeded/failed. */
  finished: Record<string, 'succeeded' | 'failed'>;
  /** Nodes given back this round (drained, then removed from their pool and released). */
  released: string[];
  /** Idle nodes being drained for release after this round. */
  draining: string[];
  /** Idle nodes scale-in kept this round, with why (a pod that blocks their drain, the pool's minimum...). */
  kept: { node: string; why: string }[];
  pending: number;
  awaitingInFlight: number;
  deferred: number;
  unhostable: number;
  hourlyCost: number;
  /** Gangs (core/gangs.ts) given no node this round, with why; gangs grown whole, by name → pods. */
  gangs: { held: string[]; grown: Record<string, number> };
  /** Nodes moved off ahead of ECS maintenance or a spot interruption (maintenance.ts), and those returned after. */
  maintenance: MaintenanceOutcome;
  /** Waiting GPU pods that are no reason to buy a node (demand.ts), by why; and those an existing node has room for. */
  notDemand: Record<NotDemand, number> & { fitsExisting: number };
}

/** What the state ConfigMap holds per pool (key `autoscale.<pool id>`). */
interface PoolRecord {
  /** A desired size decided but maybe not yet sent: re-sent (it is absolute) before anything else. */
  intent?: { from: number; to: number; at: number; reason: string; cost: number };
  /** The last request sent, until its ACK task ends. */
  request?: { taskId: string; from: number; to: number; at: number };
  /** Instance types ECS answered sold out for (a scale task failed NoStock), until when (ms). */
  noStock?: { types: string[]; until: number };
  cooldownUntil?: number;
  /** Node → when it was first seen running no GPU pod (ms). */
  idle?: Record<string, number>;
  /** Idle nodes being drained for release: the instance, and when the drain began. */
  leaving?: { node: string; instanceId: string; since: number }[];
  /** A removal decided but maybe not yet sent (re-sent, or found done, first thing next round). */
  removal?: {
    nodes: string[];
    instanceIds: string[];
    from: number;
    to: number;
    at: number;
    reason: string;
    cost: number;
  };
  /** Nodes of the pool being moved off ahead of ECS maintenance or a spot interruption (maintenance.ts). */
  maintenance?: Record<string, TrackedNode>;
  events?: PublishedEvent[];
  notices?: PendingNotice[];
}

const key = (poolId: string) => `autoscale.${poolId}`;

/**
 * How long a pool whose every instance type ECS answered sold out is passed over: cluster-autoscaler's
 * initial node-group backoff after a failed scale-up (FAQ, `--initial-node-group-backoff-duration`,
 * 5 min). Its newest node says which types were sold out for as long as CA's longest backoff (30 min).
 */
const NO_STOCK_BACKOFF_MS = 5 * 60_000;
const SOLD_OUT_MEMORY_MS = 30 * 60_000;

/** ECS's stock-out codes: `OperationDenied.NoStock` (RunInstances error codes) and its zone variants. */
const isNoStock = (code: string | undefined) => code !== undefined && /NoStock|NotEnoughResource/.test(code);

/**
 * The instance type a pool's next node will be, and why none when the pool is sold out. The
 * scaling group tries its types in their order and falls back to the next when one is sold out
 * (Auto Scaling scaling configuration `InstanceTypes`: priority by order), so a new node is the
 * first type not known sold out: not in a NoStock answer still in its backoff, and not before the
 * type of the pool's newest node made in the last 30 min (the group passed over those then).
 */
function typeToBuy(
  pool: NodePool,
  members: readonly NodeInfo[],
  rec: PoolRecord | undefined,
  now: number,
): { type: string | undefined; soldOut?: string } {
  // (the first type when every one is sold out, with why)
  const banned = new Set(rec?.noStock && rec.noStock.until > now ? rec.noStock.types : []);
  const newest = members
    .filter((n) => n.createdAt !== undefined && now - Date.parse(n.createdAt) < SOLD_OUT_MEMORY_MS)
    .sort((a, b) => Date.parse(b.createdAt!) - Date.parse(a.createdAt!))[0];
  const at = newest ? pool.instanceTypes.indexOf(newest.labels[INSTANCE_TYPE_LABEL] ?? '') : -1;
  pool.instanceTypes.slice(0, Math.max(0, at)).forEach((t) => banned.add(t));
  const type = pool.instanceTypes.find((t) => !banned.has(t));
  if (type !== undefined || pool.instanceTypes.length === 0) return { type };
  const until = rec?.noStock ? new Date(rec.noStock.until).toISOString().slice(11, 16) : '';
  // Sold out through and through: the pool is frozen, its first type still its template (for scale-in).
  return {
    type: pool.instanceTypes[0],
    soldOut: `every instance type is sold out (OperationDenied.NoStock)${until ? ` until ${until}` : ''}`,
  };
}

/**
 * What a node of the pool costs per hour. A spot pool (`spot_strategy` `SpotAsPriceGo` or
 * `SpotWithPriceLimit`) pays the market price, from DescribeSpotPriceHistory's newest entry; with a
 * price limit, at most the limit (ECS preemptible instances: the bid caps what is paid; ACK
 * `spot_price_limit`). No spot price known: the pool's limit, else the pay-as-you-go price.
 */
async function priceOf(
  deps: AutoscaleDeps,
  pool: NodePool,
  type: string,
  payAsYouGo: number,
  cache: Map<string, number | undefined>,
): Promise<number> {
  const strategy = pool.spotStrategy ?? 'NoSpot';
  if (strategy !== 'SpotAsPriceGo' && strategy !== 'SpotWithPriceLimit') return payAsYouGo;
  if (!cache.has(type)) cache.set(type, await deps.cloud.spotPrice(type));
  const market = cache.get(type);
  const limit = strategy === 'SpotWithPriceLimit' ? pool.spotPriceLimits?.[type] : undefined;
  if (market === undefined) return limit ?? payAsYouGo;
  return limit === undefined ? market : Math.min(market, limit);
}

/** GPU pods waiting for a node: not bound, not finishing. */
const waitingGpu = (pods: readonly PodInfo[]) =>
  pods.filter((p) => p.phase === 'Pending' && !p.nodeName && !p.terminating).filter(requestsGpu);

/** The waiting GPU pods that are demand (demand.ts) and have waited `waitS`. */
function podsOf(pods: readonly PodInfo[], now: number, waitS: number): PendingPod[] {
  return waitingGpu(pods)
    .filter((p) => notDemand(p) === undefined)
    .filter((p) => !p.createdAt || now - Date.parse(p.createdAt) >= waitS * 1000)
    .map(asPending);
}

/** The gang (core/gangs.ts) of each waiting pod that belongs to one, by `namespace/name`. */
function gangsOf(pods: readonly PodInfo[], specs: readonly GangSpec[] = []): Map<string, Gang> {
  const byName = new Map(specs.map((s) => [s.name, s]));
  const running = new Map<string, number>();
  for (const p of pods) {
    const g = p.nodeName && !p.terminating && p.phase !== 'Succeeded' && p.phase !== 'Failed' && gangOfPod(p, () => 0);
    if (g) running.set(g.name, (running.get(g.name) ?? 0) + 1);
  }
  const out = new Map<string, Gang>();
  for (const p of waitingGpu(pods)) {
    const g = gangOfPod(
      p,
      (name) => running.get(name) ?? 0,
      (name) => byName.get(name),
    );
    if (g) out.set(`${p.namespace}/${p.name}`, g);
  }
  return out;
}

/** The gangs' own minimums from their PodGroups and Workloads (demand.ts); none without the port. */
async function gangSpecsOf(gangs: GangObjectOps | undefined): Promise<GangSpec[]> {
  if (!gangs) return [];
  const { podGroups, workloads } = await gangs.list();
  return [...podGroups.map(podGroupSpec), ...workloads.map(kueueWorkloadSpec)].filter((s) => s !== undefined);
}

const gangPodsCovered = (fits: readonly { pod: string }[]) => fits.map((f) => f.pod);

/** A pod as the planner fits it: its requests and where it may go. */
const asPending = (p: PodInfo): PendingPod => ({
  key: `${p.namespace}/${p.name}`,
  priority: p.priority ?? 0,
  requests: { ...(p.requests ?? p.extendedResources) },
  ...(p.nodeSelector ? { nodeSelector: p.nodeSelector } : {}),
  ...(p.tolerations ? { tolerations: p.tolerations } : {}),
  ...(p.requiredNodeTerms ? { requiredTerms: p.requiredNodeTerms } : {}),
  ...(spreadKeyOf(p) ? { spread: spreadKeyOf(p)! } : {}),
});

const INSTANCE_TYPE_LABEL = 'node.kubernetes.io/instance-type';
const REGION_LABEL = 'topology.kubernetes.io/region';
const ZONE_LABELS = ['topology.kubernetes.io/zone', 'failure-domain.beta.kubernetes.io/zone'];
// A member's zone is not the pool's: a pool over several vSwitches lands new nodes in any of their zones.
const NODE_SPECIFIC_PREFIXES = [
  'kubernetes.io/hostname',
  'gpu-reflex.io/',
  'nvidia.com/mig.config.state',
  'node.kubernetes.io/exclude',
  ...ZONE_LABELS,
];
const NODE_SPECIFIC = { test: (k: string) => NODE_SPECIFIC_PREFIXES.some((p) => k.startsWith(p)) };

/** The one zone every member of a pool is in (a new node will be too), or undefined when they differ or none is. */
function zoneOf(members: readonly NodeInfo[]): string | undefined {
  const zones = new Set(members.map((n) => n.labels[ZONE_LABELS[0]!]));
  const [zone] = zones;
  return zones.size === 1 && zone ? zone : undefined;
}

function numeric(r: Readonly<Record<string, string>>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(r)) {
    try {
      out[k] = parseQuantity(v);
    } catch {
      // An unreadable quantity offers nothing.
    }
  }
  return out;
}

async function poolStates(
  deps: AutoscaleDeps,
  pools: NodePool[],
  nodes: NodeInfo[],
  records: Map<string, PoolRecord>,
  now: number,
): Promise<PoolState[]> {
  // Every type of every pool, in batches of 10 (the adapter's DescribeInstanceTypes).
  const typeIds = [...new Set(pools.flatMap((p) => p.instanceTypes))];
  const types = new Map((typeIds.length > 0 ? await deps.cloud.instanceTypes(typeIds) : []).map((t) => [t.id, t]));
  const out: PoolState[] = [];
  // One DescribePrice (and DescribeSpotPriceHistory) per instance type a pool will buy, however many pools share it.
  const prices = new Map<string, number>();
  const spot = new Map<string, number | undefined>();
  for (const p of pools) {
    const bounds = deps.policy.pools[p.id]!;
    const members = nodes.filter((n) => n.labels[NODEPOOL_LABEL] === p.id);
    const choice = typeToBuy(p, members, records.get(p.id), now);
    const type = choice.type;
    const spec = type ? types.get(type) : undefined;
    if (type && spec && !prices.has(type)) prices.set(type, await deps.cloud.hourlyPrice(type));
    const price = type && spec ? await priceOf(deps, p, type, prices.get(type)!, spot) : 0;
    if (!type || !spec) {
      deps.logger.warn('autoscale-pools: node pool has no instance type gpu-reflex can read; left alone', {
        pool: p.id,
        type,
      });
      continue;
    }
    // A new node holds what a member of the type it will be holds (exact: the kubelet's reserve
    // taken), else what the type says: a member of another type says nothing of its size.
    const alike = members.filter((n) => n.labels[INSTANCE_TYPE_LABEL] === type);
    const sized = alike.find((n) => n.ready === true) ?? alike[0];
    const sample = sized ?? members.find((n) => n.ready === true) ?? members[0];
    const offer = gpuOffer(
      spec.gpuAmount,
      spec.gpuMemoryGiB,
      p.labels[GPU_SHARE_LABEL] ?? sample?.labels[GPU_SHARE_LABEL],
      bounds.sharing?.timeSlicing,
    );
    const fromType: Record<string, number> = {
      cpu: Math.max(0, spec.cpu - deps.policy.reserve.cpu),
      memory: Math.max(0, spec.memoryGiB - deps.policy.reserve.memoryGiB) * GiB,
      ...offer.allocatable,
    };
    const allocatable = sized && !offer.gpuUnknown ? numeric(sized.allocatable) : fromType;
    // A new node's cards are all free; a member's say how its plugin splits the memory.
    const cards = offer.cards && sized ? (cardsOfNode(allocatable) ?? offer.cards) : offer.cards;
    const sampleLabels = Object.fromEntries(
      Object.entries(sample?.labels ?? {}).filter(([k]) => !NODE_SPECIFIC.test(k)),
    );
    const record = records.get(p.id);
    const frozen = p.ackAutoScaling.enable
      ? "ACK's own autoscaler manages this pool"
      : choice.soldOut
        ? choice.soldOut
        : record?.cooldownUntil !== undefined && record.cooldownUntil > now
          ? `cooling down until ${new Date(record.cooldownUntil).toISOString().slice(11, 16)} after its last scale-out`
          : undefined;
    out.push({
      id: p.id,
      name: p.name,
      instanceType: type,
      hourlyPrice: price,
      desired: p.desiredSize,
      ready: members.filter((n) => n.ready === true).length,
      min: bounds.min,
      max: bounds.max,
      maxStep: bounds.maxStep,
      // What the scheduler will see on a new node: the type's GPU labels and the well-known ones
      // (core/template.ts), then what a member shows (its zone among them), the pool's own labels,
      // and last what ACK and the type fix for certain.
      labels: {
        ...offer.labels,
        ...gpuLabels(spec.gpuAmount, spec.gpuSpec, spec.gpuMemoryGiB),
        ...wellKnownLabels({ instanceType: type, regionId: p.regionId ?? '' }),
        ...sampleLabels,
        ...p.labels,
        ...wellKnownLabels({
          instanceType: type,
          regionId: p.regionId ?? sampleLabels[REGION_LABEL] ?? '',
          ...(zoneOf(members) ? { zoneId: zoneOf(members)! } : {}),
        }),
        [NODEPOOL_LABEL]: p.id,
      },
      taints: p.taints.map(toTaint),
      allocatable,
      ...(cards ? { cards } : {}),
      ...(offer.gpuUnknown ? { gpuUnknown: offer.gpuUnknown } : {}),
      ...(offer.atMostOne ? { atMostOne: offer.atMostOne } : {}),
      ...(frozen ? { frozen } : {}),
    });
  }
  return out;
}

function poolEvent(
  deps: AutoscaleDeps,
  pool: { id: string; name: string; instanceTypes: string[] },
  at: number,
  from: number,
  to: number,
  state: GpuPoolScaledDetail['state'],
  reason: string,
  extra: { taskId?: string; cost?: number } = {},
): PublishedEvent {
  const detail: GpuPoolScaledDetail = {
    schemaVersion: SCHEMA_VERSION,
    eventId: `pool:${deps.clusterId}:${pool.id}:${from}-${to}:${at}:${state}`.slice(0, 128),
    occurredAt: new Date(deps.clock.now()).toISOString(),
    provider: 'alicloud',
    clusterId: deps.clusterId,
    nodepoolId: pool.id,
    nodepoolName: pool.name,
    instanceTypes: pool.instanceTypes.slice(0, 20),
    from,
    to,
    state,
    ...(extra.taskId ? { taskId: extra.taskId } : {}),
    ...(extra.cost !== undefined
      ? { hourlyCostDelta: { amount: Math.round(extra.cost * 100) / 100, currency: 'CNY' } }
      : {}),
    reason: reason.slice(0, 2048),
    dryRun: false,
  };
  return { source: SOURCES.functions, detailType: GPU_POOL_SCALED, detail, resources: [`nodepool/${pool.id}`] };
}

/** Sends a pool's outbox (lib/outbox.ts), then clears what went. */
const flush = (deps: AutoscaleDeps, poolId: string, r: PoolRecord): Promise<void> =>
  flushStoreOutbox(deps, key(poolId), r);

/** Writes a pool's record with events and notices in its outbox, in one write (lib/outbox.ts). */
const record = (
  deps: AutoscaleDeps,
  poolId: string,
  change: (r: PoolRecord) => PoolRecord,
  events: PublishedEvent[] = [],
  notices: Notice[] = [],
): Promise<PoolRecord> => recordWithOutbox(deps.state, key(poolId), change, events, notices);

function reasonOf(inc: Increment, plan: ScaleOutPlan): string {
  const waiting = plan.deferred.length > 0 ? `; ${plan.deferred.length} more pod(s) wait on pool limits` : '';
  return (
    `${inc.why}: ${inc.pods.slice(0, 10).join(', ')}` +
    `${inc.pods.length > 10 ? ` and ${inc.pods.length - 10} more` : ''}${waiting}`
  );
}

/** Intent first, then the absolute size, then the request with its event and notice (the outbox); the task id. */
async function growPool(
  deps: AutoscaleDeps,
  pool: NodePool,
  inc: { from: number; to: number; hourlyCost: number },
  reason: string,
  now: number,
): Promise<string> {
  await record(deps, pool.id, (x) => ({
    ...x,
    intent: { from: inc.from, to: inc.to, at: now, reason, cost: inc.hourlyCost },
  }));
  const { taskId } = await deps.cloud.setDesiredSize(pool.id, inc.to);
  const ev = poolEvent(deps, pool, now, inc.from, inc.to, 'requested', reason, { taskId, cost: inc.hourlyCost });
  const notice: Notice = {
    title: `gpu-reflex: growing node pool ${pool.name} ${inc.from} → ${inc.to}`,
    text: `${reason} (+${inc.hourlyCost}/h)`.slice(0, 1000),
    severity: 'info',
  };
  const rec = await record(
    deps,
    pool.id,
    (x) => ({
      ...x,
      intent: undefined,
      request: { taskId, from: inc.from, to: inc.to, at: now },
      cooldownUntil: now + cooldownMs(deps, pool.id),
    }),
    [ev],
    [notice],
  );
  await flush(deps, pool.id, rec);
  pool.desiredSize = inc.to;
  return taskId;
}

/** The maintenance step's view of the round (maintenance.ts): records, growth, what may move. */
function maintenanceBook(
  deps: AutoscaleDeps,
  fresh: ReadonlyMap<string, PoolRecord>,
  states: readonly PoolState[],
  now: number,
): MaintenanceBook {
  return {
    tracked: (id) => ({ ...(fresh.get(id)?.maintenance ?? {}) }),
    busy: (id) => {
      const r = fresh.get(id);
      const price = states.find((s) => s.id === id)?.hourlyPrice;
      const limit = deps.policy.approval?.aboveHourlyCost;
      if (r?.intent || r?.removal) return 'an earlier size change of the pool is still being sent';
      if (price === undefined) return 'its instance type cannot be read';
      if (limit !== undefined && price > limit)
        return `a node costs ${price}/h, above the ${limit}/h the policy lets gpu-reflex spend alone`;
      return undefined;
    },
    setTracked: async (id, change, notices = []) => {
      const rec = await record(
        deps,
        id,
        (x) => ({ ...x, maintenance: change({ ...(x.maintenance ?? {}) }) }),
        [],
        notices,
      );
      await flush(deps, id, rec);
    },
    grow: async (pool, from, to, reason) => {
      const price = states.find((s) => s.id === pool.id)?.hourlyPrice ?? 0;
      await growPool(deps, pool, { from, to, hourlyCost: Math.round((to - from) * price * 100) / 100 }, reason, now);
    },
    movable,
  };
}

export async function autoscalePools(deps: AutoscaleDeps): Promise<AutoscaleOutcome> {
  const empty: AutoscaleOutcome = {
    scaled: {},
    held: {},
    finished: {},
    released: [],
    draining: [],
    kept: [],
    pending: 0,
    awaitingInFlight: 0,
    deferred: 0,
    unhostable: 0,
    hourlyCost: 0,
    notDemand: { gated: 0, nominated: 0, 'not-unschedulable': 0, fitsExisting: 0 },
    gangs: { held: [], grown: {} },
    maintenance: { preparing: [], draining: [], returned: [], refused: [] },
  };
  // The literal is POOL_SIZE_LEASE (adapters/alicloud/ports.ts), which remediation's replacements
  // hold too; it stays spelled out so the build's check finds this function's global Lease.
  return withLease(
    'autoscale-pools',
    120,
    deps,
    async () => {
      const out: AutoscaleOutcome = {
        ...empty,
        scaled: {},
        held: {},
        finished: {},
        released: [],
        draining: [],
        kept: [],
        maintenance: { preparing: [], draining: [], returned: [], refused: [] },
      };
      const all = await deps.cloud.listNodePools();
      for (const id of Object.keys(deps.policy.pools))
        if (!all.some((p) => p.id === id))
          deps.logger.warn('autoscale-pools: the policy names a node pool the cluster does not have', {
            pool: id,
            cluster: deps.clusterId,
          });
      const managed = all.filter((p) => deps.policy.pools[p.id] !== undefined);
      const stored = await deps.state.getAll();
      const records = new Map(managed.map((p) => [p.id, (stored[key(p.id)] ?? {}) as PoolRecord]));

      // 1. Requests decided earlier: an intent not known to be sent is sent again (absolute size);
      //    a request whose ACK task ended is reported once.
      const written = new Map<string, PoolRecord>();
      for (const p of managed) {
        const r = records.get(p.id)!;
        if (r.intent) {
          // Never lower on a re-send: a size above the intent is a replacement's node (or ours, sent).
          const intent = { ...r.intent, to: Math.max(r.intent.to, p.desiredSize) };
          const { taskId } = await deps.cloud.setDesiredSize(p.id, intent.to);
          const ev = poolEvent(deps, p, intent.at, intent.from, intent.to, 'requested', intent.reason, {
            taskId,
            cost: intent.cost,
          });
          written.set(
            p.id,
            await record(
              deps,
              p.id,
              (x) => ({
                ...x,
                intent: undefined,
                request: { taskId, from: intent.from, to: intent.to, at: intent.at },
                cooldownUntil: intent.at + cooldownMs(deps, p.id),
              }),
              [ev],
            ),
          );
          p.desiredSize = intent.to;
        } else if (r.removal) {
          written.set(p.id, await sendRemoval(deps, p, r.removal));
        } else if (r.request) {
          const task = await deps.cloud.task(r.request.taskId);
          if (task.state !== 'running') {
            const req = r.request;
            const ok = task.state === 'success';
            const why = ok
              ? `${p.name}: ${req.to} nodes requested, the ACK task ended successfully`
              : `${p.name}: growing ${req.from} → ${req.to} ` +
                `failed: ${task.error?.code ?? 'unknown'}: ${task.error?.message ?? 'no detail'}` +
                (isNoStock(task.error?.code)
                  ? `; every instance type of the pool is sold out: other pools are used for ` +
                    `${NO_STOCK_BACKOFF_MS / 60_000} min`
                  : '');
            const notices: Notice[] = ok
              ? []
              : [
                  {
                    title: `gpu-reflex: node pool ${p.name} could not grow`,
                    text: why.slice(0, 500),
                    severity: 'warning',
                  },
                ];
            const soldOut = !ok && isNoStock(task.error?.code);
            const until = deps.clock.now() + NO_STOCK_BACKOFF_MS;
            written.set(
              p.id,
              await record(
                deps,
                p.id,
                (x) => ({
                  ...x,
                  request: undefined,
                  ...(soldOut ? { noStock: { types: [...p.instanceTypes], until } } : {}),
                }),
                [
                  poolEvent(deps, p, req.at, req.from, req.to, ok ? 'succeeded' : 'failed', why, {
                    taskId: req.taskId,
                  }),
                ],
                notices,
              ),
            );
            out.finished[p.id] = ok ? 'succeeded' : 'failed';
          }
        }
      }
      // The round's first read of the state holds what earlier rounds left unsent: no read per pool.
      for (const p of managed) await flush(deps, p.id, written.get(p.id) ?? records.get(p.id)!);

      // 2. Plan on fresh facts.
      const now = deps.clock.now();
      const after = await deps.state.getAll();
      const fresh = new Map(managed.map((p) => [p.id, (after[key(p.id)] ?? {}) as PoolRecord]));
      const [nodes, pods, specs] = await Promise.all([
        deps.nodes.list(),
        deps.pods.list(),
        // Unread (no Volcano or Kueue objects to be had), every waiting pod of a gang is bought for.
        gangSpecsOf(deps.gangs).catch((e: unknown) => {
          deps.logger.warn('autoscale-pools: gangs’ own minimums unread: buying for every waiting pod of a gang', {
            error: e instanceof Error ? e.message : String(e),
          });
          return [] as GangSpec[];
        }),
      ]);
      const waiting = podsOf(pods, now, deps.policy.pendingSeconds);
      const { plan: pending, fitsExisting } = withoutRoomOnExisting(waiting, nodes, pods);
      for (const f of fitsExisting.slice(0, 20))
        deps.logger.info('autoscale-pools: a card of an existing node has room for this pod', f);
      const states = await poolStates(deps, managed, nodes, fresh, now);
      // 2b. Capacity known to go away (ECS maintenance, spot interruptions): cordon, grow first, drain, return.
      out.maintenance = await maintainPools(deps, managed, nodes, pods, maintenanceBook(deps, fresh, states, now));
      for (const s of states) s.desired = managed.find((p) => p.id === s.id)!.desiredSize;
      const plan = planWithGangs(states, pending, gangsOf(pods, specs), gangPodsCovered(fitsExisting));
      Object.assign(out, {
        notDemand: { ...countNotDemand(waitingGpu(pods)), fitsExisting: fitsExisting.length },
        pending: waiting.length,
        awaitingInFlight: plan.awaitingInFlight.length,
        deferred: plan.deferred.length,
        unhostable: plan.unhostable.length,
        hourlyCost: plan.hourlyCost,
        gangs: { held: plan.held, grown: plan.gangs },
      });
      for (const why of plan.held) deps.logger.info('autoscale-pools: a gang gets all its nodes or none', { why });
      for (const u of plan.unhostable.slice(0, 20)) deps.logger.info('autoscale-pools: no pool can host this pod', u);
      for (const d of plan.deferred.slice(0, 20)) deps.logger.info('autoscale-pools: pod waits on pool limits', d);

      // 3. Act: intent first, then the absolute size, then the request with its event.
      for (const inc of plan.increments) {
        const pool = managed.find((p) => p.id === inc.poolId)!;
        const reason = reasonOf(inc, plan);
        if (await heldForApproval(deps, pool, inc, reason, now)) {
          out.held[pool.id] = inc.to;
          continue;
        }
        const taskId = await growPool(deps, pool, inc, reason, now);
        deps.logger.info('autoscale-pools: growing node pool', {
          pool: pool.id,
          from: inc.from,
          to: inc.to,
          taskId,
          pods: inc.pods.length,
          hourlyCost: inc.hourlyCost,
        });
        out.scaled[pool.id] = inc.to;
      }

      // 4. Scale-in: idle nodes of pools that did not just grow are drained, then given back.
      const replacing = replacementsByPool(after);
      for (const p of managed) {
        const template = states.find((x) => x.id === p.id);
        if (!template || out.scaled[p.id] !== undefined || p.ackAutoScaling.enable) continue;
        // Every waiting pod holds scale-in back, those an existing node has room for too: it may be this pool's.
        await scaleIn(deps, p, fresh.get(p.id)!, template, nodes, pods, waiting, now, out, replacing.get(p.id) ?? []);
      }
      return out;
    },
    () => (deps.logger.info('autoscale-pools already running elsewhere'), empty),
  );
}

const movable = (p: PodInfo) =>
  !p.terminating &&
  p.phase !== 'Succeeded' &&
  p.phase !== 'Failed' &&
  !p.owners.some((o) => o.kind === 'DaemonSet') &&
  !(MIRROR_POD_ANNOTATION in p.annotations);

/**
 * Sends a decided removal (RemoveNodePoolNodes: drain done by us, release pay-as-you-go), then records the request with
 * its event.
 */
async function sendRemoval(
  deps: AutoscaleDeps,
  pool: NodePool,
  removal: NonNullable<PoolRecord['removal']>,
): Promise<PoolRecord> {
  let taskId: string | undefined;
  try {
    ({ taskId } = await deps.cloud.removeNodes(pool.id, removal.instanceIds, { release: true, drain: false }));
  } catch (err) {
    // Sent before and under way (the answer was lost): ACK refuses them as already leaving.
    if (!(err instanceof BadInputError)) throw err;
    deps.logger.warn('autoscale-pools: removal refused, taken as already under way', {
      pool: pool.id,
      nodes: removal.nodes,
      error: err,
    });
  }
  const ev = poolEvent(deps, pool, removal.at, removal.from, removal.to, 'requested', removal.reason, {
    ...(taskId ? { taskId } : {}),
    cost: removal.cost,
  });
  const notice: Notice = {
    title: `gpu-reflex: shrinking node pool ${pool.name} ${removal.from} → ${removal.to}`,
    text: removal.reason.slice(0, 1000),
    severity: 'info',
  };
  return record(
    deps,
    pool.id,
    (x) => ({
      ...x,
      removal: undefined,
      ...(taskId ? { request: { taskId, from: removal.from, to: removal.to, at: removal.at } } : {}),
    }),
    [ev],
    [notice],
  );
}

/** `rec`: the pool's record as this round read it (a pool that grew this round is not shrunk). */
/**
 * `replacing`: remediation's replacements into this pool: none of its nodes leaves meanwhile, and idle time starts over
 * after.
 */
async function scaleIn(
  deps: AutoscaleDeps,
  pool: NodePool,
  rec: PoolRecord,
  template: PoolState,
  nodes: readonly NodeInfo[],
  pods: readonly PodInfo[],
  pending: readonly PendingPod[],
  now: number,
  out: AutoscaleOutcome,
  replacing: readonly ReplacementRecord[] = [],
): Promise<void> {
  const members = nodes.filter((n) => n.labels[NODEPOOL_LABEL] === pool.id);
  const on = (node: string) => pods.filter((p) => p.nodeName === node && movable(p));
  const policy = deps.policy.scaleIn;
  const blockers = drainBlockers(members, nodes, pods, new Set((rec.leaving ?? []).map((l) => l.node)));
  // Drains under way: a drained node is given back; one that will not drain is handed back to scheduling.
  const leaving: NonNullable<PoolRecord['leaving']> = [];
  const drained: NonNullable<PoolRecord['leaving']> = [];
  // A node being drained is not counted idle (planScaleIn), so one whose drain is abandoned must
  // idle a full period again before it is tried again.
  // While remediation replaces a node of the pool, no node counts as idle: none leaves meanwhile,
  // and the new node (the broken one's capacity, not demand that went away) idles a full period after.
  const idleBefore = replacing.length > 0 ? {} : (rec.idle ?? {});
  if (replacing.length > 0)
    deps.logger.info('autoscale-pools: a node of the pool is being replaced; idle time starts over after', {
      pool: pool.id,
      nodes: replacing.map((r) => r.node),
    });
  for (const l of rec.leaving ?? []) {
    if (!members.some((n) => n.name === l.node)) continue;
    const left = on(l.node);
    if (left.length === 0) drained.push(l);
    else if (now - l.since >= policy.drainTimeoutMinutes * 60_000) {
      await deps.nodes.uncordon(l.node);
      const text =
        `${l.node} still runs ${left.length} pod(s) after ${policy.drainTimeoutMinutes} min of draining ` +
        `(${left
          .slice(0, 5)
          .map((p) => `${p.namespace}/${p.name}`)
          .join(', ')}; disruption budgets?): kept, uncordoned`;
      await flush(
        deps,
        pool.id,
        await record(
          deps,
          pool.id,
          (x) => x,
          [],
          [{ title: `gpu-reflex: could not give back ${l.node}`, text, severity: 'warning' }],
        ),
      );
      deps.logger.warn('autoscale-pools: drain for scale-in timed out', {
        pool: pool.id,
        node: l.node,
        pods: left.length,
      });
    } else {
      leaving.push(l);
      for (const p of left) await evict(deps, p);
    }
  }
  if (drained.length > 0) {
    const from = pool.desiredSize;
    const to = Math.max(0, from - drained.length);
    const reason =
      `${pool.name}: ${from} → ${to}: ${drained.map((d) => d.node).join(', ')} ran no GPU pod ` +
      `for ${policy.idleMinutes} min and ${drained.length === 1 ? 'is' : 'are'} drained; released` +
      keptWords(blockers);
    const removal = {
      nodes: drained.map((d) => d.node),
      instanceIds: drained.map((d) => d.instanceId),
      from,
      to,
      at: now,
      reason,
      cost: -(from - to) * template.hourlyPrice,
    };
    await record(deps, pool.id, (x) => ({ ...x, leaving, removal }));
    const rec2 = await sendRemoval(deps, pool, removal);
    await flush(deps, pool.id, rec2);
    out.released.push(...removal.nodes);
  }
  // New releases.
  const held = (n: NodeInfo): string | undefined => {
    const moving = rec.maintenance?.[n.name];
    if (moving) return `being moved off ahead of ${moving.type} (maintenance.ts)`;
    const st = n.labels[STATE_LABEL];
    if (st && st !== 'healthy') return `remediation holds it (${STATE_LABEL}=${st})`;
    if (n.taints.some((t) => t.key === DEFAULT_TAINT_KEY)) return `remediation holds it (taint ${DEFAULT_TAINT_KEY})`;
    if (n.unschedulable) return 'cordoned by someone else';
    if (n.ready !== true) return 'not Ready';
    const blocked = blockers.get(n.name);
    if (blocked) return blocked;
    if (!instanceIdOf(n.providerId)) return `spec.providerID names no ECS instance (${n.providerId ?? 'unset'})`;
    return undefined;
  };
  const members2 = members.filter((n) => !drained.some((d) => d.node === n.name));
  const decision = planScaleIn(
    {
      id: pool.id,
      name: pool.name,
      min: deps.policy.pools[pool.id]!.min,
      maxStep: deps.policy.pools[pool.id]!.maxStep,
      nodes: members2.map((n) => {
        const why = held(n);
        return {
          name: n.name,
          eligible: why === undefined,
          ...(why ? { heldBy: why } : {}),
          gpuPods: pods.filter((p) => p.nodeName === n.name && movable(p) && holdsDevices(p)).length,
        };
      }),
      leaving: leaving.map((l) => l.node),
      template,
      ...(rec.cooldownUntil !== undefined && rec.cooldownUntil > now
        ? {
            frozen:
              `${pool.name} grew within its cooldown ` +
              `(until ${new Date(rec.cooldownUntil).toISOString().slice(11, 16)})`,
          }
        : {}),
    },
    idleBefore,
    pending,
    now,
    policy.idleMinutes,
  );
  // A node moved off ahead of maintenance idles from its return on, not from its drain.
  for (const n of Object.keys(rec.maintenance ?? {})) delete decision.idleSince[n];
  for (const k of decision.kept) deps.logger.info('autoscale-pools: idle node kept', { pool: pool.id, ...k });
  out.kept.push(...decision.kept);
  const starting = decision.release.map((r) => ({
    node: r.node,
    instanceId: instanceIdOf(members2.find((n) => n.name === r.node)!.providerId)!,
    since: now,
  }));
  // The intent first (this node is ours to drain), then the cordon and the evictions.
  await record(deps, pool.id, (x) => ({ ...x, idle: decision.idleSince, leaving: [...leaving, ...starting] }));
  for (const s of starting) {
    await deps.nodes.cordon(s.node);
    for (const p of on(s.node)) await evict(deps, p);
    deps.logger.info('autoscale-pools: draining an idle node to give it back', {
      pool: pool.id,
      node: s.node,
      why: decision.release.find((r) => r.node === s.node)?.why,
    });
  }
  out.draining.push(...leaving.map((l) => l.node), ...starting.map((s) => s.node));
}

/**
 * Idle members whose pods keep them (node → why): cluster-autoscaler's scale-down rules
 * (drainable.ts), and its last one: every pod that would be evicted must fit on another node, as
 * CA simulates them rescheduled before it removes a node (cluster-autoscaler/simulator/cluster.go).
 * Nodes already leaving take nothing. A node running a GPU pod is not idle and not looked at.
 */
function drainBlockers(
  members: readonly NodeInfo[],
  nodes: readonly NodeInfo[],
  pods: readonly PodInfo[],
  leaving: ReadonlySet<string>,
): Map<string, string> {
  const out = new Map<string, string>();
  for (const n of members) {
    if (leaving.has(n.name)) continue;
    const here = pods.filter((p) => p.nodeName === n.name && !p.terminating);
    // A DRA pod holds its GPU through a claim, not an extended resource: busy all the same.
    if (here.some((p) => drainCounts(p) && holdsDevices(p))) continue;
    const why = here.map(whyBlocks).find((w) => w !== undefined);
    if (why) {
      out.set(n.name, why);
      continue;
    }
    const moving = here.filter(drainCounts);
    if (moving.length === 0) continue;
    const others = nodes.filter((o) => o.name !== n.name && !leaving.has(o.name));
    const { plan: stuck } = withoutRoomOnExisting(moving.map(asPending), others, pods);
    if (stuck.length > 0) out.set(n.name, `${stuck[0]!.key} blocks its removal: it fits on no other node`);
  }
  return out;
}

/** The nodes a shrink leaves in place and why, for its GPU Pool Scaled reason ('' when none). */
function keptWords(blockers: ReadonlyMap<string, string>): string {
  if (blockers.size === 0) return '';
  const words = [...blockers].slice(0, 5).map(([node, why]) => `${node} kept: ${why}`);
  return `; ${words.join('; ')}${blockers.size > 5 ? `; and ${blockers.size - 5} more kept` : ''}`;
}

async function evict(deps: AutoscaleDeps, p: PodInfo): Promise<void> {
  const r = await deps.pods.evict(p.namespace, p.name, { uid: p.uid });
  if (r.outcome === 'blocked')
    deps.logger.info('autoscale-pools: eviction blocked for now', {
      pod: `${p.namespace}/${p.name}`,
      reason: r.reason,
    });
}

function cooldownMs(deps: AutoscaleDeps, poolId: string): number {
  return (deps.policy.pools[poolId]?.cooldownMinutes ?? deps.policy.cooldownMinutes) * 60_000;
}
