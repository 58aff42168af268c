/**
 * Whether the nodes a pool was grown for have arrived: joined the cluster Ready **and** advertising the GPUs they
 * were bought for. ACK's task saying `success` is not that: the instances may never register (a bootstrap that
 * fails), or register with no GPU in allocatable (a driver or device plugin that does not come up), and the pods
 * that asked for them would wait behind capacity the planner believes is on its way.
 *
 * A node that should have GPUs but advertises none is not Ready for this, as cluster-autoscaler reads it
 * (kubernetes/autoscaler cluster-autoscaler/processors/customresources/gpu_processor.go
 * `FilterOutNodesWithUnreadyResources`: "nodes with GPU coming up without installed drivers"), and it says nothing of
 * what a new node will hold (`GetNodeGpuTarget`: the node group's template is used instead).
 */
import type { NodePool } from '../adapters/alicloud/ports.ts';
import type { NodeInfo } from '../adapters/kube/model.ts';
import { parseQuantity } from '../adapters/kube/quantity.ts';
import { type AutoscaleDeps, type PoolRecord, flush, record } from './deps.ts';

/**
 * True when the node advertises at least one of the GPU resources a node of its pool offers (`offer`: the resources
 * of the pool's type, core/template.ts `gpuOffer`, each > 0); a type with no GPU expects none.
 */
export function advertisesGpus(n: NodeInfo, offer: Readonly<Record<string, number>>): boolean {
  const keys = Object.keys(offer).filter((k) => offer[k]! > 0);
  if (keys.length === 0) return true;
  return keys.some((k) => {
    try {
      return parseQuantity(n.allocatable[k]) > 0;
    } catch {
      // An unreadable quantity advertises nothing.
      return false;
    }
  });
}

/**
 * How long the nodes of a scale-out are awaited: cluster-autoscaler's `--max-node-provision-time` default ("Cluster
 * Autoscaler expects requested nodes to appear within 15 minutes ... After this time, if they are still unregistered,
 * it stops considering them in simulations and may attempt to scale up a different group": kubernetes/autoscaler
 * cluster-autoscaler/FAQ.md "How does scale-up work?"). Here a node that joined without its GPUs is still awaited.
 */
export const MAX_NODE_PROVISION_MS = 15 * 60_000;

/**
 * cluster-autoscaler's `MaxNodeStartupTime` (cluster-autoscaler/clusterstate/clusterstate.go: "the maximum time from
 * the moment the node is registered to the time the node is ready", 15 min). `GetUpcomingNodes` there counts as
 * upcoming only what is neither Ready, nor Unready, nor registered longer than that without becoming Ready.
 */
export const MAX_NODE_STARTUP_MS = 15 * 60_000;

/**
 * A member of a pool registered at least MAX_NODE_STARTUP_MS ago that is not Ready: a broken node, not capacity on its
 * way, so the pods it would have hosted are demand. One whose creation time is unknown reads as starting.
 */
export function longNotReady(n: NodeInfo, now: number): boolean {
  if (n.ready === true || n.createdAt === undefined) return false;
  const age = now - Date.parse(n.createdAt);
  return Number.isFinite(age) && age >= MAX_NODE_STARTUP_MS;
}

/** A scale-out whose new nodes have not all arrived (deps.ts `PoolRecord.growing`), followed every round. */
export interface Growing {
  /** When its latest size was sent (ms): each scale-out gives its nodes MAX_NODE_PROVISION_MS from then. */
  at: number;
  from: number;
  to: number;
  /** The pool's nodes when it was decided, by name: any other node of the pool is one of its new ones. */
  before: string[];
  /** When a person was told its nodes had not arrived (ms): told once. */
  told?: number;
  /**
   * Set once the pool's size was seen raised above `to` by someone else (a person in the console, remediation's
   * replacement): `to` and `at` are then that size and when it was seen.
   */
  raised?: true;
}

/** The record's `growing` once a scale-out to `to` is decided: a later one extends an earlier one still followed. */
export function startGrowing(
  prev: Growing | undefined,
  members: readonly string[],
  from: number,
  to: number,
  at: number,
): Growing {
  return prev ? { ...prev, to, at, told: undefined, raised: undefined } : { at, from, to, before: [...members] };
}

/** What became of a followed scale-out's nodes this round (pure). */
export interface Arrival {
  /** Its new nodes that count as joined: Ready and advertising the pool's GPUs. */
  arrived: string[];
  /**
   * How many new nodes the pool should have now: its desired size less the nodes it had when grown that are still
   * there. A person may have lowered it (fewer awaited) or raised it: ACK ties no instance to the request that bought
   * it, so another's new node cannot be told from ours, and all the pool asks for are awaited.
   */
  expected: number;
  /** Its new nodes Ready without GPUs, and those not Ready. */
  withoutGpus: string[];
  notReady: string[];
  /** Set when every expected node is there: the record forgets it. */
  done: boolean;
  /** Set past MAX_NODE_PROVISION_MS with nodes still missing: why the pool is not grown again. */
  overdue?: string;
  /** The followed scale-out as this round sees it: extended to a size someone else raised the pool to (recorded). */
  growing: Growing;
}

export function arrivalOf(
  followed: Growing,
  members: readonly NodeInfo[],
  desired: number,
  offer: Readonly<Record<string, number>>,
  now: number,
): Arrival {
  // A size raised above ours by someone else is followed as a later scale-out of ours is (startGrowing): its nodes
  // and ours cannot be told apart, and it gets its own MAX_NODE_PROVISION_MS from when it is first seen. Before, a
  // node of theirs that joined was counted as ours, ours that never joined was forgotten, and the pool's missing
  // node was counted as on its way for good.
  const g: Growing =
    desired > followed.to ? { ...followed, to: desired, at: now, told: undefined, raised: true } : followed;
  const before = new Set(g.before);
  const stayed = members.filter((n) => before.has(n.name)).length;
  const fresh = members.filter((n) => !before.has(n.name));
  const arrived = fresh.filter((n) => n.ready === true && advertisesGpus(n, offer)).map((n) => n.name);
  const withoutGpus = fresh.filter((n) => n.ready === true && !advertisesGpus(n, offer)).map((n) => n.name);
  const notReady = fresh.filter((n) => n.ready !== true).map((n) => n.name);
  const expected = Math.max(0, Math.min(g.to, desired) - stayed);
  const missing = expected - arrived.length;
  const done = missing <= 0;
  const out: Arrival = { arrived, expected, withoutGpus, notReady, done, growing: g };
  if (done || now - g.at < MAX_NODE_PROVISION_MS) return out;
  const since = new Date(g.at).toISOString().slice(11, 16);
  const others = g.raised ? ` (raised to ${g.to} by someone else: their nodes and ours look alike)` : '';
  return {
    ...out,
    overdue:
      `${missing} of the ${expected} nodes it was grown by at ${since}${others} not Ready with GPUs ` +
      `after ${MAX_NODE_PROVISION_MS / 60_000} min: not grown again until they are, or its size is changed`,
  };
}

/** Why each missing node is missing, for the person told. */
export function missingWhy(a: Arrival): string {
  const never = Math.max(0, a.expected - a.arrived.length - a.withoutGpus.length - a.notReady.length);
  const list = (names: string[]) => names.slice(0, 5).join(', ') + (names.length > 5 ? ', …' : '');
  return [
    ...(never > 0 ? [`${never} never joined the cluster (ACK's task may say success: check its ECS instances)`] : []),
    ...(a.notReady.length > 0 ? [`${a.notReady.length} joined but are not Ready (${list(a.notReady)})`] : []),
    ...(a.withoutGpus.length > 0
      ? [
          `${a.withoutGpus.length} joined Ready without advertising GPUs (${list(a.withoutGpus)}): ` +
            'the NVIDIA driver or the device plugin did not come up',
        ]
      : []),
  ].join('; ');
}

/**
 * Writes what this round saw of each followed scale-out: forgotten once its nodes are there; past its provision time
 * with nodes missing, a person told once (a chat warning, the log) — the pool is held meanwhile (pool-states.ts).
 */
export async function followArrivals(
  deps: AutoscaleDeps,
  pools: readonly NodePool[],
  seen: ReadonlyMap<string, Arrival>,
  records: ReadonlyMap<string, PoolRecord>,
  now: number,
): Promise<void> {
  for (const p of pools) {
    const a = seen.get(p.id);
    const g = records.get(p.id)?.growing;
    if (!a || !g) continue;
    if (a.done) {
      await record(deps, p.id, (x) => ({ ...x, growing: undefined }));
      continue;
    }
    // A size someone else raised the pool to: followed from now on, with its own provision time.
    if (a.growing.to > g.to) {
      const seen = a.growing;
      await record(deps, p.id, (x) => ({
        ...x,
        ...(x.growing ? { growing: { ...seen, before: x.growing.before } } : {}),
      }));
      continue;
    }
    if (!a.overdue || g.told !== undefined) continue;
    const why = missingWhy(a);
    deps.logger.warn('autoscale-pools: the nodes a node pool was grown by have not arrived', {
      pool: p.id,
      overdue: a.overdue,
      why,
    });
    const rec = await record(
      deps,
      p.id,
      (x) => ({ ...x, ...(x.growing ? { growing: { ...x.growing, told: now } } : {}) }),
      [],
      [
        {
          title:
            `gpu-reflex: node pool ${p.name} grew ${g.from} → ${a.growing.to} ` +
            `but its new nodes are not ready with GPUs ` +
            `after ${MAX_NODE_PROVISION_MS / 60_000} min`,
          text: `${p.name}: ${a.overdue}. ${why}. Waiting pods go to other pools that fit them, or wait.`.slice(
            0,
            1000,
          ),
          severity: 'warning',
        },
      ],
    );
    await flush(deps, p.id, rec);
  }
}
