/**
 * Dry-run as one decorator around the ports, chosen at wiring time (not a flag checked in every
 * handler). Reads go through to the real ports, with what the run would have written laid over
 * them (dry-run-overlay.ts); writes are recorded, kept in the overlay and answered with what they
 * would have returned, so a dry run's plans and reports match a real run's, one decision after
 * another. Evictions answer `evicted` for a pod that exists (disruption budgets are judged only by
 * the API server, so a dry run cannot foresee `blocked`).
 */
import type { Clock } from '../clock.ts';
import { DryRunOverlay, matchesEqualitySelector } from './dry-run-overlay.ts';
import { nodeDelta, sameCondition, type NodeChange } from './node-change.ts';
import type { ApplyResult, EvictResult, Json, LeaseAttempt, NodeInfo, PodInfo, Taint, TaintEffect } from './model.ts';
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

export { DryRunOverlay };

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

/**
 * The dry-run ports. `overlay` keeps what the run would have written and lays it over every later
 * read (dry-run-overlay.ts), so a second write is answered as the live run would answer it after
 * the first; by default each call gets its own, a wiring passes the one its process shares.
 */
export function dryRunPorts<P extends DryRunnable>(
  ports: P,
  record: (action: DryRunAction) => void,
  overlay: DryRunOverlay = new DryRunOverlay(),
): P {
  const note = <T>(op: string, args: unknown[], result: T): T => (record({ op, args, result }), result);
  const { nodes, pods, quotas, state, leases } = ports;
  const read = async (n: string) => overlay.node(await nodes.get(n));
  /** Keeps `change` when it changes the node as it reads now; answers whether it did. */
  const change = async (op: string, args: unknown[], n: string, c: NodeChange, basis?: NodeInfo) => {
    const changes = nodeDelta(basis ?? (await read(n)), c) !== undefined;
    if (changes) overlay.noteNodeChange(n, c);
    return note(op, args, changes);
  };
  /** A list as it would read: changed nodes re-judged against a simple selector (set-based ones as listed). */
  const overlaid = async <M extends { name: string; labels: Record<string, string> }>(
    selector: string | undefined,
    list: (s?: string) => Promise<M[]>,
    view: (m: M) => M,
    one: (n: string) => Promise<M>,
  ): Promise<M[]> => {
    const listed = (await list(selector)).map(view);
    if (!overlay.changesNodes) return listed;
    if (selector !== undefined && selector.includes('(')) return listed;
    const have = new Set(listed.map((m) => m.name));
    const more: M[] = [];
    for (const n of overlay.changedNodes().filter((x) => !have.has(x))) {
      const m = await one(n).catch(() => undefined);
      if (m) more.push(view(m));
    }
    return [...listed, ...more].filter((m) => matchesEqualitySelector(m.labels, selector));
  };

  const nodeOps: NodeOps = {
    get: read,
    list: (s) =>
      overlaid(
        s,
        (x) => nodes.list(x),
        (n) => overlay.node(n),
        (n) => nodes.get(n),
      ),
    listMetadata: (s) =>
      overlaid(
        s,
        (x) => nodes.listMetadata(x),
        (m) => overlay.meta(m),
        async (n) => {
          const { name, labels, annotations } = await nodes.get(n);
          return { name, labels, annotations };
        },
      ),
    cordon: (n) => change('nodes.cordon', [n], n, { unschedulable: true }),
    uncordon: (n) => change('nodes.uncordon', [n], n, { unschedulable: false }),
    addTaint: (n, t: Taint) => change('nodes.addTaint', [n, t], n, { addTaints: [t] }),
    removeTaint: (n, k, e?: TaintEffect) =>
      change('nodes.removeTaint', [n, k, e], n, {
        removeTaints: [e === undefined ? { key: k } : { key: k, effect: e }],
      }),
    setLabels: (n, l) => change('nodes.setLabels', [n, l], n, { labels: l }),
    setAnnotations: (n, a) => change('nodes.setAnnotations', [n, a], n, { annotations: a }),
    update: (n, c, o) => change('nodes.update', [n, c], n, c, o?.basis),
    setCondition: async (n, c) => {
      const changes = !sameCondition((await read(n)).conditions?.[c.type], c);
      if (changes) overlay.noteCondition(n, c);
      return note('nodes.setCondition', [n, c], changes);
    },
  };

  const podOps: PodOps = {
    listOnNode: async (n) => overlay.pods(await pods.listOnNode(n)),
    list: async (q) => overlay.pods(await pods.list(q)),
    evict: async (ns, name, options?: EvictOptions): Promise<EvictResult> => {
      const pod = overlay.pods(await pods.list({ namespace: ns })).find((p: PodInfo) => p.name === name);
      if (pod) overlay.noteEviction(ns, name, options?.gracePeriodSeconds ?? pod.terminationGracePeriodSeconds);
      return note('pods.evict', [ns, name, options], pod ? { outcome: 'evicted' } : { outcome: 'gone' });
    },
  };

  const applied = (exists: boolean, same: boolean): ApplyResult =>
    !exists ? 'created' : same ? 'unchanged' : 'updated';
  const hasLabels = (cur: Record<string, string>, want?: Record<string, string>) =>
    Object.entries(want ?? {}).every(([k, v]) => cur[k] === v);
  // The run's quota and limit-range writes are kept too: a later rewrite in the same run reads them
  // (the live run's second pass finds its quota `unchanged`, so does the dry run's).
  const quotaKey = (ns: string, n: string) => `${ns}/${n}`;
  const getQuota = async (ns: string, n: string) =>
    overlay.quotas.has(quotaKey(ns, n)) ? overlay.quotas.get(quotaKey(ns, n)) : quotas.getQuota(ns, n);
  const getLimitRange = async (ns: string, n: string) =>
    overlay.limitRanges.get(quotaKey(ns, n)) ?? (await quotas.getLimitRange(ns, n));
  const quotaOps: QuotaOps = {
    getQuota,
    listQuotas: async (ns) => overlay.listed(await quotas.listQuotas(ns), overlay.quotas, ns),
    getLimitRange,
    listLimitRanges: async (ns) => overlay.listed(await quotas.listLimitRanges(ns), overlay.limitRanges, ns),
    applyQuota: async (ns, n, spec: QuotaSpec) => {
      const cur = await getQuota(ns, n);
      const same =
        cur !== undefined &&
        sameJson(cur.hard, spec.hard) &&
        hasLabels(cur.labels, spec.labels) &&
        hasLabels(cur.annotations ?? {}, spec.annotations);
      if (!same)
        overlay.quotas.set(quotaKey(ns, n), {
          namespace: ns,
          name: n,
          labels: { ...(cur?.labels ?? {}), ...spec.labels },
          annotations: { ...(cur?.annotations ?? {}), ...spec.annotations },
          hard: { ...spec.hard },
          used: cur?.used ?? {},
          resourceVersion: 'dry-run',
        });
      return note('quotas.applyQuota', [ns, n, spec], applied(cur !== undefined, same));
    },
    deleteQuota: async (ns, n, rv) => {
      const cur = await getQuota(ns, n);
      if (cur) overlay.quotas.set(quotaKey(ns, n), undefined);
      return note('quotas.deleteQuota', [ns, n, rv], cur ? 'deleted' : 'absent');
    },
    applyLimitRange: async (ns, n, spec: LimitRangeSpec) => {
      const cur = await getLimitRange(ns, n);
      const same = cur !== undefined && sameJson(cur.limits, spec.limits) && hasLabels(cur.labels, spec.labels);
      if (!same)
        overlay.limitRanges.set(quotaKey(ns, n), {
          namespace: ns,
          name: n,
          labels: { ...(cur?.labels ?? {}), ...spec.labels },
          limits: structuredClone(spec.limits),
          resourceVersion: 'dry-run',
        });
      return note('quotas.applyLimitRange', [ns, n, spec], applied(cur !== undefined, same));
    },
  };

  // Shards too: a dry run must read the approvals and the ledger where the real run keeps them, and
  // each later read sees what the run would have written there.
  const dryStore = (store: StateStore, prefix: string): StateStore => {
    const get = async (k: string) =>
      overlay.hasState(`${prefix}${k}`) ? overlay.stateOf(`${prefix}${k}`) : store.get(k);
    return {
      get,
      getAll: async () => overlay.allState(prefix, await store.getAll()),
      update: async <T extends Json>(k: string, fn: (cur: Json | undefined) => T | undefined) => {
        const next = fn(await get(k));
        overlay.setState(`${prefix}${k}`, next);
        return note('state.update', [`${prefix}${k}`], next);
      },
      ...(store.shard ? { shard: (name: string) => dryStore(store.shard!(name), `${prefix}${name}/`) } : {}),
    };
  };
  const stateStore = dryStore(state, '');

  const leaseNow = async (n: string) => (overlay.leases.has(n) ? overlay.leases.get(n) : leases.get(n));
  const leaseOps: LeaseOps = {
    get: leaseNow,
    // A dry run must not take real locks: it answers as if it had, when the lease is free, and holds it in the overlay.
    tryAcquire: async (n, holder, durationS, clock: Clock): Promise<LeaseAttempt> => {
      const cur = await leaseNow(n);
      const free =
        cur === undefined || cur.holder === undefined || cur.holder === holder || cur.expiresAtMs <= clock.now();
      const lease = free ? { name: n, holder, durationS, expiresAtMs: clock.now() + durationS * 1000 } : cur;
      if (free) overlay.leases.set(n, lease);
      return note('leases.tryAcquire', [n, holder, durationS], { acquired: free, lease });
    },
    renew: async (n, holder, clock: Clock) => {
      const cur = await leaseNow(n);
      const ours = cur?.holder === holder;
      if (ours) overlay.leases.set(n, { ...cur, expiresAtMs: clock.now() + cur.durationS * 1000 });
      return note('leases.renew', [n, holder], ours);
    },
    release: async (n, holder) => {
      const ours = (await leaseNow(n))?.holder === holder;
      if (ours) overlay.leases.set(n, undefined);
      return note('leases.release', [n, holder], ours);
    },
  };

  // DRA: reads go through, with the rules the run would have created or deleted.
  const dra = ports.deviceTaints;
  const made = overlay.deviceRules;
  const draRules = async (n: string) =>
    [...new Set([...(await dra!.rules(n)), ...(made.created.get(n) ?? [])])].filter((r) => !made.removed.has(r));
  const deviceTaints: DeviceTaintOps | undefined = dra && {
    devices: (n, d) => dra.devices(n, d),
    rules: draRules,
    create: async (r) => {
      const creates = !(await draRules(r.node)).includes(r.name);
      made.removed.delete(r.name);
      made.created.set(r.node, new Set([...(made.created.get(r.node) ?? []), r.name]));
      return note('deviceTaints.create', [r], creates);
    },
    // Which node a rule is for is in its name only as a hash: say it would be deleted.
    remove: async (name) => {
      made.removed.add(name);
      return note('deviceTaints.remove', [name], true);
    },
  };

  // gpushare card fences: reads go through; a change is answered by what the ConfigMap would list.
  const cards = ports.cardFences;
  const cardsListed = async (n: string) => overlay.cardFences.get(n) ?? (await cards!.listed(n));
  const cardFences: CardFenceOps | undefined = cards && {
    listed: cardsListed,
    change: async (n, add, remove) => {
      const now = new Set(await cardsListed(n));
      const changes = add.some((c) => !now.has(c)) || remove.some((c) => now.has(c));
      for (const c of add) now.add(c);
      for (const c of remove) now.delete(c);
      overlay.cardFences.set(
        n,
        [...now].sort((a, b) => a - b),
      );
      return note('cardFences.change', [n, add, remove], changes);
    },
  };

  // A dry run records nothing in the cluster, Events included; it notes what it would have recorded.
  const events: EventRecorder = {
    record: async (regarding, event) => void note('events.record', [regarding, event], undefined),
  };
  const parted = ports.migParted;
  const partedText = async () => (overlay.migParted ? overlay.migParted.text : parted!.read());
  const migParted: ConfigFileOps | undefined = parted && {
    ref: parted.ref,
    read: partedText,
    ownership: () => parted.ownership(),
    clusterPolicies: () => parted.clusterPolicies(),
    update: async (fn) => {
      const text = fn(await partedText());
      overlay.migParted = { text };
      note('migParted.update', [text], undefined);
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
