/**
 * What a dry run would have written, kept in memory and laid over every later read, so that each
 * decision of the run sees the world the live run would have made: the second node of a storm finds
 * the first one already out in the ledger and is held, as it would be live (issue #31).
 *
 * Kept here: node changes (taints, cordon, labels, annotations, conditions), the state store's
 * keys (the ledger, approvals, outboxes), evictions (the pod terminates for its grace period, then
 * is gone, as the kubelet would end it), leases, DRA device taint rules, gpushare card fences and
 * mig-parted's config. Not kept: quotas and limit ranges (their reads stay the cluster's). What
 * the API server alone decides (a disruption budget's refusal, another writer) is not foreseen.
 *
 * One overlay lives as long as its process: a dry-run wiring shares it between every function that
 * runs there on one cluster (lib/wiring.ts); a Lambda container's is forgotten at its cold start.
 */
import type { Clock } from '../clock.ts';
import { mergeStringMap, withTaint, withoutTaint, type NodeChange } from './node-change.ts';
import type {
  Json,
  LeaseState,
  LimitRangeInfo,
  NodeCondition,
  NodeInfo,
  NodeMeta,
  PodInfo,
  QuotaInfo,
  Taint,
} from './model.ts';

/** A pod evicted by the dry run: terminating from `at`, gone once its grace period has passed. */
interface Evicted {
  at: number;
  graceS: number;
}

/** The kubelet's default when a pod names none (PodSpec terminationGracePeriodSeconds, default 30). */
const DEFAULT_GRACE_S = 30;

export class DryRunOverlay {
  /** Node changes in the order the run made them, replayed over each read. */
  private readonly nodeChanges = new Map<string, NodeChange[]>();
  private readonly conditions = new Map<string, Map<string, NodeCondition>>();
  /** State keys (with their shard prefix) → value; `undefined` means deleted. */
  private readonly state = new Map<string, Json | undefined>();
  private readonly evicted = new Map<string, Evicted>();
  /** Lease name → holding; `undefined` means released. */
  readonly leases = new Map<string, LeaseState | undefined>();
  readonly deviceRules = { created: new Map<string, Set<string>>(), removed: new Set<string>() };
  readonly cardFences = new Map<string, number[]>();
  /** `<ns>/<name>` → the ResourceQuota as the run would have left it; `undefined` means deleted. */
  readonly quotas = new Map<string, QuotaInfo | undefined>();
  /** `<ns>/<name>` → the LimitRange as the run would have left it. */
  readonly limitRanges = new Map<string, LimitRangeInfo>();
  migParted: { text: string } | undefined;

  constructor(private readonly clock: Pick<Clock, 'now'> = { now: () => Date.now() }) {}

  /** Whether any node write is kept (reads then need the overlay's view). */
  get changesNodes(): boolean {
    return this.nodeChanges.size > 0 || this.conditions.size > 0;
  }

  changedNodes(): string[] {
    return [...new Set([...this.nodeChanges.keys(), ...this.conditions.keys()])];
  }

  noteNodeChange(node: string, change: NodeChange): void {
    this.nodeChanges.set(node, [...(this.nodeChanges.get(node) ?? []), change]);
  }

  noteCondition(node: string, condition: NodeCondition): void {
    const byType = this.conditions.get(node) ?? new Map<string, NodeCondition>();
    byType.set(condition.type, condition);
    this.conditions.set(node, byType);
  }

  /** The node as it would read had the run's writes been made. */
  node<N extends NodeInfo>(n: N): N {
    const changes = this.nodeChanges.get(n.name);
    const conditions = this.conditions.get(n.name);
    if (!changes && !conditions) return n;
    const out = { ...n, ...this.meta(n) };
    for (const c of changes ?? []) {
      // The taints were ours or the node's, so their effects are the API's three (V1Taint types it as text).
      for (const r of c.removeTaints ?? [])
        out.taints = (withoutTaint(out.taints, r.key, r.effect) as Taint[] | undefined) ?? out.taints;
      for (const t of c.addTaints ?? []) out.taints = (withTaint(out.taints, t) as Taint[] | undefined) ?? out.taints;
      if (c.unschedulable !== undefined) out.unschedulable = c.unschedulable;
    }
    if (conditions) out.conditions = { ...(n.conditions ?? {}), ...Object.fromEntries(conditions) };
    return out as N;
  }

  /** Names, labels and annotations as they would read. */
  meta<M extends NodeMeta>(m: M): M {
    const changes = this.nodeChanges.get(m.name);
    if (!changes) return m;
    let labels = m.labels;
    let annotations = m.annotations;
    for (const c of changes) {
      if (c.labels) labels = applied(labels, c.labels);
      if (c.annotations) annotations = applied(annotations, c.annotations);
    }
    return { ...m, labels, annotations };
  }

  hasState(key: string): boolean {
    return this.state.has(key);
  }

  stateOf(key: string): Json | undefined {
    return this.state.get(key);
  }

  setState(key: string, value: Json | undefined): void {
    this.state.set(key, value);
  }

  /** The store's keys under `prefix` as they would read, over what the cluster holds. */
  allState(prefix: string, real: Record<string, Json>): Record<string, Json> {
    const out = { ...real };
    for (const [k, v] of this.state) {
      if (!k.startsWith(prefix) || k.slice(prefix.length).includes('/')) continue;
      const key = k.slice(prefix.length);
      if (v === undefined) delete out[key];
      else out[key] = v;
    }
    return out;
  }

  /** Objects as they would list: the run's writes in `kept` laid over the `real` list of `namespace` (or all). */
  listed<T extends { namespace: string; name: string }>(
    real: T[],
    kept: ReadonlyMap<string, T | undefined>,
    namespace: string | undefined,
  ): T[] {
    if (kept.size === 0) return real;
    const out = new Map<string, T>(real.map((o) => [`${o.namespace}/${o.name}`, o]));
    for (const [key, o] of kept) {
      if (namespace !== undefined && !key.startsWith(`${namespace}/`)) continue;
      if (o === undefined) out.delete(key);
      else out.set(key, o);
    }
    return [...out.values()];
  }

  noteEviction(namespace: string, name: string, graceS: number | undefined): void {
    const key = `${namespace}/${name}`;
    if (!this.evicted.has(key)) this.evicted.set(key, { at: this.clock.now(), graceS: graceS ?? DEFAULT_GRACE_S });
  }

  /** The pods as they would read: an evicted one terminating, then gone after its grace period. */
  pods(pods: PodInfo[]): PodInfo[] {
    if (this.evicted.size === 0) return pods;
    const now = this.clock.now();
    return pods.flatMap((p) => {
      const e = this.evicted.get(`${p.namespace}/${p.name}`);
      if (!e) return [p];
      return now >= e.at + e.graceS * 1000 ? [] : [{ ...p, terminating: true }];
    });
  }
}

function applied(current: Record<string, string>, change: Record<string, string | null>): Record<string, string> {
  if (!mergeStringMap(current, change)) return current;
  const out = { ...current };
  for (const [k, v] of Object.entries(change)) {
    if (v === null) delete out[k];
    else out[k] = v;
  }
  return out;
}

/**
 * Whether labels satisfy an equality-based selector (`a=b`, `a==b`, `a!=b`, `a`, `!a`, joined by
 * commas: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#equality-based-requirement).
 * Set-based selectors (`in (…)`) are left to the API server: callers do not re-judge those.
 */
export function matchesEqualitySelector(labels: Record<string, string>, selector: string | undefined): boolean {
  if (selector === undefined || selector.trim() === '') return true;
  return selector.split(',').every((term) => {
    const t = term.trim();
    if (t.startsWith('!')) return !(t.slice(1).trim() in labels);
    const neq = t.indexOf('!=');
    if (neq >= 0) return labels[t.slice(0, neq).trim()] !== t.slice(neq + 2).trim();
    const eq = t.indexOf('=');
    if (eq < 0) return t in labels;
    const value = t.slice(t[eq + 1] === '=' ? eq + 2 : eq + 1).trim();
    return labels[t.slice(0, eq).trim()] === value;
  });
}
