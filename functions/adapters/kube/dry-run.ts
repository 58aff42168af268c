/**
 * Dry-run as one decorator around the ports, chosen at wiring time (not a flag checked in every
 * handler). Reads go through to the real ports; writes are recorded and answered with what they
 * would have returned, computed from a read, so a dry run's plan and report match a real run's.
 * Evictions answer `evicted` for a pod that exists (disruption budgets are judged only by the
 * API server, so a dry run cannot foresee `blocked`).
 */
import type { Clock } from '../clock.ts';
import { mergeStringMap, nodeDelta, sameCondition, withTaint, withoutTaint } from './node-change.ts';
import type { ApplyResult, EvictResult, Json, LeaseAttempt, PodInfo, Taint, TaintEffect } from './model.ts';
import type {
  ConfigFileOps,
  CardFenceOps,
  DeviceTaintOps,
  EventRecorder,
  EvictOptions,
  LeaseOps,
  LimitRangeSpec,
  NodeOps,
  PodOps,
  QuotaOps,
  QuotaSpec,
  StateStore,
} from './ports.ts';
import { sameJson } from './same-json.ts';

export interface DryRunAction {
  /** `<port>.<method>`, as the fakes record it. */
  op: string;
  args: unknown[];
  /** What the call would have answered. */
  result: unknown;
}

export interface DryRunnable {
  nodes: NodeOps;
  pods: PodOps;
  quotas: QuotaOps;
  state: StateStore;
  leases: LeaseOps;
  deviceTaints?: DeviceTaintOps;
  cardFences?: CardFenceOps;
  migParted?: ConfigFileOps;
}

export function dryRunPorts<P extends DryRunnable>(ports: P, record: (action: DryRunAction) => void): P {
  const note = <T>(op: string, args: unknown[], result: T): T => (record({ op, args, result }), result);
  const { nodes, pods, quotas, state, leases } = ports;

  const nodeOps: NodeOps = {
    get: (n) => nodes.get(n),
    list: (s) => nodes.list(s),
    listMetadata: (s) => nodes.listMetadata(s),
    cordon: async (n) => note('nodes.cordon', [n], !(await nodes.get(n)).unschedulable),
    uncordon: async (n) => note('nodes.uncordon', [n], (await nodes.get(n)).unschedulable),
    addTaint: async (n, t: Taint) =>
      note('nodes.addTaint', [n, t], withTaint((await nodes.get(n)).taints, t) !== undefined),
    removeTaint: async (n, k, e?: TaintEffect) =>
      note('nodes.removeTaint', [n, k, e], withoutTaint((await nodes.get(n)).taints, k, e) !== undefined),
    setLabels: async (n, l) =>
      note('nodes.setLabels', [n, l], mergeStringMap((await nodes.get(n)).labels, l) !== undefined),
    setAnnotations: async (n, a) =>
      note('nodes.setAnnotations', [n, a], mergeStringMap((await nodes.get(n)).annotations, a) !== undefined),
    update: async (n, c, o) =>
      note('nodes.update', [n, c], nodeDelta(o?.basis ?? (await nodes.get(n)), c) !== undefined),
    setCondition: async (n, c) =>
      note('nodes.setCondition', [n, c], !sameCondition((await nodes.get(n)).conditions?.[c.type], c)),
  };

  const podOps: PodOps = {
    listOnNode: (n) => pods.listOnNode(n),
    list: (q) => pods.list(q),
    evict: async (ns, name, options?: EvictOptions): Promise<EvictResult> => {
      const found = (await pods.list({ namespace: ns })).some((p: PodInfo) => p.name === name);
      return note('pods.evict', [ns, name, options], found ? { outcome: 'evicted' } : { outcome: 'gone' });
    },
  };

  const applied = (exists: boolean, same: boolean): ApplyResult =>
    !exists ? 'created' : same ? 'unchanged' : 'updated';
  const hasLabels = (cur: Record<string, string>, want?: Record<string, string>) =>
    Object.entries(want ?? {}).every(([k, v]) => cur[k] === v);
  const quotaOps: QuotaOps = {
    getQuota: (ns, n) => quotas.getQuota(ns, n),
    listQuotas: (ns) => quotas.listQuotas(ns),
    getLimitRange: (ns, n) => quotas.getLimitRange(ns, n),
    listLimitRanges: (ns) => quotas.listLimitRanges(ns),
    applyQuota: async (ns, n, spec: QuotaSpec) => {
      const cur = await quotas.getQuota(ns, n);
      return note(
        'quotas.applyQuota',
        [ns, n, spec],
        applied(
          cur !== undefined,
          cur !== undefined &&
            sameJson(cur.hard, spec.hard) &&
            hasLabels(cur.labels, spec.labels) &&
            hasLabels(cur.annotations ?? {}, spec.annotations),
        ),
      );
    },
    deleteQuota: async (ns, n, rv) =>
      note('quotas.deleteQuota', [ns, n, rv], (await quotas.getQuota(ns, n)) ? 'deleted' : 'absent'),
    applyLimitRange: async (ns, n, spec: LimitRangeSpec) => {
      const cur = await quotas.getLimitRange(ns, n);
      return note(
        'quotas.applyLimitRange',
        [ns, n, spec],
        applied(
          cur !== undefined,
          cur !== undefined && sameJson(cur.limits, spec.limits) && hasLabels(cur.labels, spec.labels),
        ),
      );
    },
  };

  // Shards too: a dry run must read the approvals and the ledger where the real run keeps them.
  const dryStore = (store: StateStore, prefix: string): StateStore => ({
    get: (k) => store.get(k),
    getAll: () => store.getAll(),
    update: async <T extends Json>(k: string, fn: (cur: Json | undefined) => T | undefined) =>
      note('state.update', [`${prefix}${k}`], fn(await store.get(k))),
    ...(store.shard ? { shard: (name: string) => dryStore(store.shard!(name), `${prefix}${name}/`) } : {}),
  });
  const stateStore = dryStore(state, '');

  const leaseOps: LeaseOps = {
    get: (n) => leases.get(n),
    // A dry run must not take real locks: it answers as if it had, when the lease is free.
    tryAcquire: async (n, holder, durationS, clock: Clock): Promise<LeaseAttempt> => {
      const cur = await leases.get(n);
      const free =
        cur === undefined || cur.holder === undefined || cur.holder === holder || cur.expiresAtMs <= clock.now();
      const lease = free ? { name: n, holder, durationS, expiresAtMs: clock.now() + durationS * 1000 } : cur;
      return note('leases.tryAcquire', [n, holder, durationS], { acquired: free, lease });
    },
    renew: async (n, holder) => note('leases.renew', [n, holder], (await leases.get(n))?.holder === holder),
    release: async (n, holder) => note('leases.release', [n, holder], (await leases.get(n))?.holder === holder),
  };

  // DRA: reads go through; a rule is answered as created when the node has none by that name.
  const dra = ports.deviceTaints;
  const deviceTaints: DeviceTaintOps | undefined = dra && {
    devices: (n, d) => dra.devices(n, d),
    rules: (n) => dra.rules(n),
    create: async (r) => note('deviceTaints.create', [r], !(await dra.rules(r.node)).includes(r.name)),
    // Which node a rule is for is in its name only as a hash: say it would be deleted.
    remove: async (name) => note('deviceTaints.remove', [name], true),
  };

  // gpushare card fences: reads go through; a change is answered by what the ConfigMap lists now.
  const cards = ports.cardFences;
  const cardFences: CardFenceOps | undefined = cards && {
    listed: (n) => cards.listed(n),
    change: async (n, add, remove) => {
      const now = new Set(await cards.listed(n));
      const changes = add.some((c) => !now.has(c)) || remove.some((c) => now.has(c));
      return note('cardFences.change', [n, add, remove], changes);
    },
  };

  // A dry run records nothing in the cluster, Events included; it notes what it would have recorded.
  const events: EventRecorder = {
    record: async (regarding, event) => void note('events.record', [regarding, event], undefined),
  };
  const parted = ports.migParted;
  const migParted: ConfigFileOps | undefined = parted && {
    ref: parted.ref,
    read: () => parted.read(),
    ownership: () => parted.ownership(),
    update: async (fn) => {
      const current = await parted.read();
      note('migParted.update', [fn(current)], undefined);
    },
  };
  return {
    ...ports,
    nodes: nodeOps,
    pods: podOps,
    quotas: quotaOps,
    state: stateStore,
    leases: leaseOps,
    ...('events' in ports ? { events } : {}),
    ...(deviceTaints ? { deviceTaints } : {}),
    ...(cardFences ? { cardFences } : {}),
    ...(migParted ? { migParted } : {}),
  };
}
