import { NODEPOOL_LABEL, type SizedPool } from '../adapters/alicloud/ports.ts';
import { type NodeInfo, type PodInfo, requestsGpu } from '../adapters/kube/model.ts';
import type { GangObjectOps } from '../adapters/kube/ports.ts';
import { parseQuantity } from '../adapters/kube/quantity.ts';
import { toTaint } from '../adapters/kube/convert.ts';
import type { PendingPod, PoolState } from './core/planner.ts';
import { ACK_GPU_MODE_LABEL, cardsOfNode, gpuLabels, gpuOffer, wellKnownLabels } from './core/template.ts';
import { gangOfPod, kueueWorkloadSpec, notDemand, podGroupSpec, type GangSpec } from './demand.ts';
import type { Gang } from './core/gangs.ts';
import { spreadKeyOf } from './anti-affinity.ts';
import { GiB, type AutoscaleDeps, type PoolRecord } from './deps.ts';
import { INSTANCE_TYPE_LABEL, typeToBuy, priceOf } from './stock.ts';
import { advertisesGpus, arrivalOf, longNotReady, type Arrival } from './arrivals.ts';

/** ACK's GPU mode of a pool's nodes (core/template.ts): `default` is exclusive, `cgpu`/`share`/`core_mem` share. */
export const GPU_SHARE_LABEL = ACK_GPU_MODE_LABEL;

/** GPU pods waiting for a node: not bound, not finishing. */
export const waitingGpu = (pods: readonly PodInfo[]) =>
  pods.filter((p) => p.phase === 'Pending' && !p.nodeName && !p.terminating).filter(requestsGpu);

/** The waiting GPU pods that are demand (demand.ts) and have waited `waitS`. */
export function podsOf(pods: readonly PodInfo[], now: number, waitS: number): PendingPod[] {
  return waitingGpu(pods)
    .filter((p) => notDemand(p) === undefined)
    .filter((p) => !p.createdAt || now - Date.parse(p.createdAt) >= waitS * 1000)
    .map(asPending);
}

/** The gang (core/gangs.ts) of each waiting pod that belongs to one, by `namespace/name`. */
export function gangsOf(pods: readonly PodInfo[], specs: readonly GangSpec[] = []): Map<string, Gang> {
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
export async function gangSpecsOf(gangs: GangObjectOps | undefined): Promise<GangSpec[]> {
  if (!gangs) return [];
  const { podGroups, workloads } = await gangs.list();
  return [...podGroups.map(podGroupSpec), ...workloads.map(kueueWorkloadSpec)].filter((s) => s !== undefined);
}

export const gangPodsCovered = (fits: readonly { pod: string }[]) => fits.map((f) => f.pod);

/** A pod as the planner fits it: its requests and where it may go. */
export const asPending = (p: PodInfo): PendingPod => ({
  key: `${p.namespace}/${p.name}`,
  priority: p.priority ?? 0,
  requests: { ...(p.requests ?? p.extendedResources) },
  ...(p.nodeSelector ? { nodeSelector: p.nodeSelector } : {}),
  ...(p.tolerations ? { tolerations: p.tolerations } : {}),
  ...(p.requiredNodeTerms ? { requiredTerms: p.requiredNodeTerms } : {}),
  ...(spreadKeyOf(p) ? { spread: spreadKeyOf(p)! } : {}),
});

export const REGION_LABEL = 'topology.kubernetes.io/region';
export const ZONE_LABELS = ['topology.kubernetes.io/zone', 'failure-domain.beta.kubernetes.io/zone'];
// A member's zone is not the pool's: a pool over several vSwitches lands new nodes in any of their zones.
export const NODE_SPECIFIC_PREFIXES = [
  'kubernetes.io/hostname',
  'gpu-reflex.io/',
  'nvidia.com/mig.config.state',
  'node.kubernetes.io/exclude',
  ...ZONE_LABELS,
];
export const NODE_SPECIFIC = { test: (k: string) => NODE_SPECIFIC_PREFIXES.some((p) => k.startsWith(p)) };

/** The one zone every member of a pool is in (a new node will be too), or undefined when they differ or none is. */
export function zoneOf(members: readonly NodeInfo[]): string | undefined {
  const zones = new Set(members.map((n) => n.labels[ZONE_LABELS[0]!]));
  const [zone] = zones;
  return zones.size === 1 && zone ? zone : undefined;
}

export function numeric(r: Readonly<Record<string, string>>): Record<string, number> {
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

/** A pool's state this round: the planner's template, and what maintenance (maintenance.ts) needs of the same reads. */
export interface RoundPoolState extends PoolState {
  /** The GPU resources a node of the pool offers (core/template.ts `gpuOffer`), for arrivals.ts `advertisesGpus`. */
  gpuOffer: Readonly<Record<string, number>>;
  /** Why the pool is held: its last scale-out's nodes did not arrive in time (arrivals.ts `overdue`), if so. */
  arrivalHold?: string;
  /** Why no node of it can be bought now: every instance type sold out (stock.ts `typeToBuy`), if so. */
  soldOut?: string;
}

export async function poolStates(
  deps: AutoscaleDeps,
  pools: SizedPool[],
  nodes: NodeInfo[],
  records: Map<string, PoolRecord>,
  now: number,
  /** Filled with what became of each pool's followed scale-out (arrivals.ts), for run.ts to record. */
  arrivals = new Map<string, Arrival>(),
): Promise<RoundPoolState[]> {
  // Every type of every pool, in batches of 10 (the adapter's DescribeInstanceTypes).
  const typeIds = [...new Set(pools.flatMap((p) => p.instanceTypes))];
  const types = new Map((typeIds.length > 0 ? await deps.cloud.instanceTypes(typeIds) : []).map((t) => [t.id, t]));
  const out: RoundPoolState[] = [];
  // One DescribePrice (and DescribeSpotPriceHistory) per instance type a pool will buy, however many pools share it.
  const prices = new Map<string, number | undefined>();
  const spot = new Map<string, number | undefined>();
  for (const p of pools) {
    const bounds = deps.policy.pools[p.id]!;
    const members = nodes.filter((n) => n.labels[NODEPOOL_LABEL] === p.id);
    const choice = typeToBuy(p, members, records.get(p.id), now);
    const type = choice.type;
    const spec = type ? types.get(type) : undefined;
    if (type && spec && !prices.has(type)) prices.set(type, await deps.cloud.hourlyPrice(type));
    const price = type && spec ? await priceOf(deps, p, type, prices.get(type), spot) : undefined;
    if (!type || !spec) {
      deps.logger.warn('autoscale-pools: node pool has no instance type gpu-reflex can read; left alone', {
        pool: p.id,
        type,
      });
      continue;
    }
    if (price === undefined) {
      // Unknown is not free: gpu-reflex buys nothing it cannot price (and no approval limit could hold it).
      deps.logger.warn("autoscale-pools: Alibaba Cloud gives no price for the node pool's instance type; left alone", {
        pool: p.id,
        type,
      });
      continue;
    }
    // A new node holds what a member of the type it will be holds (exact: the kubelet's reserve
    // taken), else what the type says: a member of another type says nothing of its size, and nor
    // does one that advertises none of the type's GPUs (its driver or device plugin is down:
    // arrivals.ts), or every GPU pod would read the pool as unable to host it.
    const alike = members.filter((n) => n.labels[INSTANCE_TYPE_LABEL] === type);
    const labelled = alike.find((n) => n.ready === true) ?? alike[0] ?? members.find((n) => n.ready === true);
    const mode = p.labels[GPU_SHARE_LABEL] ?? (labelled ?? members[0])?.labels[GPU_SHARE_LABEL];
    const offer = gpuOffer(spec.gpuAmount, spec.gpuMemoryGiB, mode, bounds.sharing?.timeSlicing);
    const withGpus = alike.filter((n) => advertisesGpus(n, offer.allocatable));
    const sized = withGpus.find((n) => n.ready === true) ?? withGpus[0];
    const sample = sized ?? labelled ?? members[0];
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
    // A new node counts as joined once Ready with its GPUs; past its provision time, missing ones are not on their way.
    const arrival = record?.growing && arrivalOf(record.growing, members, p.desiredSize, offer.allocatable, now);
    if (arrival) arrivals.set(p.id, arrival);
    const unarrived = new Set(arrival && !arrival.done ? arrival.withoutGpus : []);
    // A member long registered and not Ready is broken, not on its way: it hides no demand (arrivals.ts longNotReady).
    const joined = (n: NodeInfo) => (n.ready === true || longNotReady(n, now)) && !unarrived.has(n.name);
    const ready = members.filter(joined).length;
    const until = record?.cooldownUntil !== undefined && record.cooldownUntil > now ? record.cooldownUntil : undefined;
    const hhmm = (ms: number) => new Date(ms).toISOString().slice(11, 16);
    const cooling =
      until === undefined
        ? undefined
        : record?.refused
          ? `ACK refused its size at ${hhmm(record.refused.at)} (${record.refused.why}): ` +
            `not asked again until ${hhmm(until)}`
          : `cooling down until ${hhmm(until)} after its last scale-out`;
    const frozen = p.ackAutoScaling.enable
      ? "ACK's own autoscaler manages this pool"
      : (choice.soldOut ?? arrival?.overdue ?? cooling);
    out.push({
      id: p.id,
      name: p.name,
      instanceType: type,
      hourlyPrice: price,
      desired: p.desiredSize,
      // Overdue nodes are no capacity on its way (cluster-autoscaler "stops considering them in simulations").
      ready: arrival?.overdue ? Math.max(ready, p.desiredSize) : ready,
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
      gpuOffer: offer.allocatable,
      ...(arrival?.overdue ? { arrivalHold: arrival.overdue } : {}),
      ...(choice.soldOut ? { soldOut: choice.soldOut } : {}),
    });
  }
  return out;
}
