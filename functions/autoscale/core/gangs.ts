import { planScaleOut, type Increment, type PendingPod, type PoolState, type ScaleOutPlan } from './planner.ts';

/**
 * Gangs in scale-out (pure; issue #33). A gang's pods run together or not at all, so buying nodes
 * for part of one pays for nodes that idle while the rest waits:
 * - Volcano binds none of a PodGroup's pods until `minMember` of them fit at once (volcano.sh/en/
 *   docs/podgroup/, the gang plugin: volcano.sh/en/docs/plugins/); its pods name the group in the
 *   annotation `scheduling.k8s.io/group-name`;
 * - Kueue admits a plain-pod group as one workload (kueue.sigs.k8s.io/docs/tasks/run/plain_pods/):
 *   its pods carry the label `kueue.x-k8s.io/pod-group-name` and the annotation
 *   `kueue.x-k8s.io/pod-group-total-count`.
 * cluster-autoscaler plans pod by pod and may grow for part of a gang (its FAQ points gangs at
 * Kueue's ProvisioningRequest instead). Here a gang is planned first, alone, on the pools as they
 * are: its nodes are bought all in one round, or none are, with why; the other pods are planned
 * after, on what is left.
 */
export interface Gang {
  /** What people call it: `PodGroup ml/train`, `Kueue workload ml/train`. */
  name: string;
  /** How many of its pods must be placed now for any to run; unset: every one waiting. */
  size?: number;
  /**
   * Whether `size` is the gang's own minimum to start (Volcano's `spec.minMember`, Kueue's
   * `podSets[].minCount` under partial admission), read from its PodGroup or Workload: then only
   * that many waiting pods are bought for now, the rest wait for the gang to run (they are ordinary
   * demand after). Unset: `size` is a count of pods still to come (Kueue's total-count annotation).
   */
  minimum?: boolean;
  /**
   * Volcano's `spec.minResources`, in base units (cpu in cores, memory in bytes): the least the
   * group's pods must ask for all together before Volcano starts it (volcano.sh/en/docs/podgroup/).
   * The pods bought for are chosen until they reach it, beyond `size` if need be.
   */
  minResources?: Record<string, number>;
}

export interface GangPlan extends ScaleOutPlan {
  /** Gangs planned whole this round (their name → their pods' count). */
  gangs: Record<string, number>;
  /** Gangs given no node this round, each with why (`PodGroup ml/train needs 4 nodes of pool …: not growing`). */
  held: string[];
}

/**
 * Plans `pending` as planScaleOut does, but each gang's pods (by `gangOf`) all or none. `covered`
 * are gang pods an existing node has room for (existing-room.ts): part of the gang, no node needed.
 */
export function planWithGangs(
  pools: readonly PoolState[],
  pending: readonly PendingPod[],
  gangOf: ReadonlyMap<string, Gang>,
  covered: readonly string[] = [],
): GangPlan {
  const byGang = new Map<string, { gang: Gang; pods: PendingPod[]; covered: number }>();
  const solo: PendingPod[] = [];
  for (const p of pending) {
    const g = gangOf.get(p.key);
    if (!g) {
      solo.push(p);
      continue;
    }
    const e = byGang.get(g.name) ?? { gang: g, pods: [], covered: 0 };
    e.pods.push(p);
    byGang.set(g.name, e);
  }
  for (const k of covered) {
    const g = gangOf.get(k);
    const e = g && byGang.get(g.name);
    if (e) e.covered++;
  }
  let cur = pools.map((p) => ({ ...p }));
  const out: GangPlan = {
    increments: [],
    hourlyCost: 0,
    awaitingInFlight: [],
    unhostable: [],
    deferred: [],
    gangs: {},
    held: [],
  };
  for (const name of [...byGang.keys()].sort()) {
    const { gang, pods, covered: near } = byGang.get(name)!;
    const have = pods.length + near;
    if (gang.size !== undefined && have < gang.size) {
      const why = `${name} has ${have} of its ${gang.size} pods ready to schedule: not growing until the rest are`;
      out.deferred.push(...pods.map((p) => ({ pod: p.key, why })));
      out.held.push(why);
      continue;
    }
    const start = gang.minimum ? startingSet(gang, pods, near) : { pods };
    if ('why' in start) {
      out.deferred.push(...pods.map((p) => ({ pod: p.key, why: start.why })));
      out.held.push(start.why);
      continue;
    }
    const later = pods.filter((p) => !start.pods.includes(p));
    if (later.length > 0) {
      const why = `${name} starts with ${start.pods.length + near} of its ${have} pods: the rest wait until it runs`;
      out.deferred.push(...later.map((p) => ({ pod: p.key, why })));
    }
    const plan = planScaleOut(cur, start.pods);
    if (plan.deferred.length > 0 || plan.unhostable.length > 0) {
      const why = whyNotWhole(cur, start.pods, name, plan);
      out.deferred.push(...pods.map((p) => ({ pod: p.key, why })));
      out.held.push(why);
      continue;
    }
    out.gangs[name] = start.pods.length;
    const what =
      later.length > 0
        ? `${name} (${start.pods.length} of its ${pods.length} waiting pods, what it needs to start; all or none)`
        : `${name} (${pods.length} pods, all or none)`;
    cur = merge(out, plan, cur, what);
  }
  merge(out, planScaleOut(cur, solo), cur);
  return out;
}

/**
 * The waiting pods a gang with its own minimum needs bought to start: `size` less those an existing
 * node has room for (`near`), highest priority first then by name, and more while the chosen ones
 * (with `near`'s, counted as none: the cautious side) ask for less than `minResources`. A gang whose
 * pods all together ask for less than `minResources` never starts (Volcano keeps it Pending): why.
 */
function startingSet(gang: Gang, pods: readonly PendingPod[], near: number): { pods: PendingPod[] } | { why: string } {
  const order = [...pods].sort((a, b) => b.priority - a.priority || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  const min = Object.entries(gang.minResources ?? {}).filter(([, v]) => v > 0);
  const asked = new Map<string, number>();
  const short = () => min.find(([k, v]) => (asked.get(k) ?? 0) < v);
  const out: PendingPod[] = [];
  for (const p of order) {
    if (out.length >= Math.max(0, (gang.size ?? pods.length) - near) && short() === undefined) break;
    out.push(p);
    for (const [k, v] of Object.entries(p.requests)) asked.set(k, (asked.get(k) ?? 0) + v);
  }
  const s = short();
  if (s)
    return {
      why:
        `${gang.name}: its ${pods.length} waiting pods ask for ${asked.get(s[0]) ?? 0} ${s[0]}, ` +
        `its minResources ${s[1]}: it never starts, not growing`,
    };
  return { pods: out };
}

/**
 * Why a gang gets no node: when the pools could host it but their max (or step) leaves too few
 * nodes, how many it needs against how many are left; otherwise the planner's own reasons.
 */
function whyNotWhole(pools: readonly PoolState[], pods: PendingPod[], name: string, plan: ScaleOutPlan): string {
  const unbounded = planScaleOut(
    pools.map((p) => ({ ...p, max: Number.MAX_SAFE_INTEGER, maxStep: Number.MAX_SAFE_INTEGER })),
    pods,
  );
  const inc = unbounded.increments.find((i) => i.add > 0);
  const pool = inc && pools.find((p) => p.id === inc.poolId);
  if (inc && pool && unbounded.deferred.length === 0 && unbounded.unhostable.length === 0 && !pool.frozen) {
    // The planner's room (planner.ts): the step, within the max above the larger of desired and min.
    const byMax = pool.max - Math.max(pool.desired, pool.min);
    const left = Math.max(0, Math.min(pool.maxStep, byMax));
    const limit = pool.maxStep < byMax ? `its step of ${pool.maxStep}` : `its max of ${pool.max}`;
    return `${name} needs ${inc.to - inc.from} nodes of pool ${pool.name}, ${limit} leaves ${left}: not growing`;
  }
  const first = plan.unhostable[0] ?? plan.deferred[0]!;
  const n = plan.unhostable.length + plan.deferred.length;
  return `${name}: ${n} of its ${pods.length} pods cannot get a node (${first.why}): not growing`;
}

/** Adds `plan` to `out`, one increment per pool; returns the pools as the plan leaves them. */
function merge(out: GangPlan, plan: ScaleOutPlan, pools: PoolState[], gang?: string): PoolState[] {
  out.awaitingInFlight.push(...plan.awaitingInFlight);
  out.unhostable.push(...plan.unhostable);
  out.deferred.push(...plan.deferred);
  for (const inc of plan.increments) {
    const was = out.increments.findIndex((x) => x.poolId === inc.poolId);
    const why = gang ? `${inc.why} for ${gang}` : inc.why;
    if (was < 0) out.increments.push({ ...inc, why });
    else out.increments[was] = joined(out.increments[was]!, inc, why);
  }
  out.hourlyCost = out.increments.reduce((t, x) => t + x.hourlyCost, 0);
  out.awaitingInFlight.sort();
  // What the next plan sees: the nodes this one adds and the nodes on their way it filled are
  // taken (counted as joined, so they are not offered again; a gang's spare room on them is left
  // unused, the cautious side); the step left is what they did not take.
  return pools.map((p) => {
    const inc = plan.increments.find((i) => i.poolId === p.id);
    const added = inc ? inc.to - inc.from : 0;
    const filled = plan.inFlightUsed?.[p.id] ?? 0;
    if (added === 0 && filled === 0) return p;
    return {
      ...p,
      desired: p.desired + added,
      ready: Math.min(p.desired + added, p.ready + added + filled),
      maxStep: Math.max(0, p.maxStep - added),
    };
  });
}

function joined(a: Increment, b: Increment, why: string): Increment {
  return {
    ...a,
    to: b.to,
    add: a.add + b.add,
    hourlyCost: a.hourlyCost + b.hourlyCost,
    pods: [...a.pods, ...b.pods].sort(),
    nodes: [...a.nodes, ...b.nodes],
    why: `${a.why}; ${why}`,
  };
}
