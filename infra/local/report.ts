import type { DeadLetter, EventEnvelope } from './bus/index.ts';
import { pendingByResource, type ClusterCounters } from './cluster-observer.ts';
import type { Node, Pod } from './kube/types.ts';
import { parseQuantity } from './kube/quantity.ts';
import type { Expectation } from './scenario.ts';
import type { Summary, TimelineEntry } from './timeline.ts';

/**
 * The `--report FILE` JSON: every event as the bus accepted it, every delivery attempt and dead
 * letter, every action the functions published, the timeline, and the final nodes and pods as the
 * Kubernetes API returned them. Tests assert on this and on the cluster, never on printed text.
 */
export interface DeliveryRecord {
  atMs: number;
  rule: string;
  function: string;
  attempt: number;
  ok: boolean;
  errorName?: string;
  error?: string;
}

export interface StackReport {
  scenario: { name: string; description: string; source: string; durationSeconds: number };
  clock: 'wall' | 'virtual';
  cluster: 'simulated' | 'kubeconfig';
  /** Wall-clock time the run took, ms. */
  wallMs: number;
  /** Each accepted event: scenario time, and the EventBridge envelope exactly as delivered. */
  events: { atMs: number; detailType: string; source: string; detail: unknown; event: EventEnvelope }[];
  deliveries: DeliveryRecord[];
  deadLetters: DeadLetter[];
  /** `Remediation` (and other function-published) details, in order. */
  actions: { atMs: number; detailType: string; detail: Record<string, unknown> }[];
  evicted: string[];
  rescheduled: ClusterCounters['rescheduled'];
  timeline: TimelineEntry[];
  /**
   * How many were left out of `events`, `deliveries`, `timeline` and `deadLetters`: each keeps the
   * last `historySize` (default 10,000) so a long run stays within bounded memory. The summary
   * counts everything.
   */
  dropped: { events: number; deliveries: number; timeline: number; deadLetters: number };
  /** Nodes and pods as the API listed them before the first step, and after the last. */
  initial: { nodes: Node[]; pods: Pod[] };
  final: { nodes: Node[]; pods: Pod[] };
  summary: Summary;
}

const inc = (r: Record<string, number>, k: string) => (r[k] = (r[k] ?? 0) + 1);

/**
 * Running counts of what the summary and the `expect` checks need, kept as events and deliveries
 * arrive: the lists themselves are bounded (the last N), the counts are not.
 */
export class EventTally {
  readonly eventsByDetailType: Record<string, number> = {};
  readonly actionsByKind: Record<string, number> = {};
  readonly deliveryFailures: Record<string, number> = {};
  /** Evictions the functions reported done in Remediation steps. */
  evictionsDone = 0;
  /** `detail-type\nnode` (and `detail-type\n` for any node) → events. */
  private readonly byNode = new Map<string, number>();
  /** Remediation events by `node\naction\nprofile` (profile '' when none decided). */
  private readonly remediations: Record<string, number> = {};

  addEvent(e: { detailType: string; detail: unknown }): void {
    inc(this.eventsByDetailType, e.detailType);
    const d = (e.detail ?? {}) as {
      action?: string;
      phase?: string;
      node?: unknown;
      steps?: { kind: string; result: string }[];
      target?: { node?: unknown };
      profile?: unknown;
    };
    if (e.detailType === 'Remediation') {
      inc(this.actionsByKind, `${d.action} ${d.phase}`);
      const profile = typeof d.profile === 'string' ? d.profile : '';
      inc(this.remediations, `${String(d.target?.node)}\n${d.action}\n${profile}`);
      this.evictionsDone += (Array.isArray(d.steps) ? d.steps : []).filter(
        (s) => s?.kind === 'evict' && s.result === 'done',
      ).length;
    }
    const keys = [`${e.detailType}\n`, ...(typeof d.node === 'string' ? [`${e.detailType}\n${d.node}`] : [])];
    for (const key of keys) this.byNode.set(key, (this.byNode.get(key) ?? 0) + 1);
    if (this.needles.size === 0) return;
    const text = JSON.stringify(e.detail ?? {});
    for (const needle of this.needles)
      if (text.includes(needle))
        for (const key of keys) this.byNode.set(`${key}\n${needle}`, (this.byNode.get(`${key}\n${needle}`) ?? 0) + 1);
  }

  addDelivery(d: DeliveryRecord): void {
    if (!d.ok) inc(this.deliveryFailures, d.function);
  }

  /** Remediation events about `node`, of `action` when given, decided by `profile` when given ('' = none). */
  remediationCount(node: string, action?: string, profile?: string): number {
    let n = 0;
    for (const [k, v] of Object.entries(this.remediations)) {
      const [kn, ka, kp] = k.split('\n');
      if (kn === node && (action === undefined || ka === action) && (profile === undefined || kp === profile)) n += v;
    }
    return n;
  }

  /** Texts whose events are counted apart (an expectation's `says`): only these, so nothing else is kept. */
  private readonly needles = new Set<string>();

  watch(says: Iterable<string>): void {
    for (const x of says) this.needles.add(x);
  }

  /** Events of a detail-type, from one node when `node` is given, saying `says` (watched) when given. */
  count(detailType: string, node?: string, says?: string): number {
    return this.byNode.get(`${detailType}\n${node ?? ''}${says === undefined ? '' : `\n${says}`}`) ?? 0;
  }
}

/** A tally of lists held in full (tests, one-shot runs). */
export function tallyOf(
  events: readonly { detailType: string; detail: unknown }[],
  deliveries: readonly DeliveryRecord[] = [],
): EventTally {
  const t = new EventTally();
  for (const e of events) t.addEvent(e);
  for (const d of deliveries) t.addDelivery(d);
  return t;
}

export interface SummaryInput {
  tally: EventTally;
  deadLetters: number;
  counters: ClusterCounters;
  /** True when `counters` come from the cluster's change feed (the simulated cluster). */
  observed: boolean;
  nodes: readonly Node[];
  pods: readonly Pod[];
}

export function summarize(i: SummaryInput): Summary {
  const t = i.tally;
  const state = (n: Node) => n.metadata.labels?.['gpu-reflex.io/state'];
  return {
    eventsByDetailType: { ...t.eventsByDetailType },
    actionsByKind: { ...t.actionsByKind },
    nodesCordoned: i.nodes.filter((n) => n.spec?.unschedulable).map((n) => n.metadata.name),
    nodesTainted: i.nodes
      .filter((n) => (n.spec?.taints ?? []).some((t) => t.key.startsWith('gpu-reflex.io/')))
      .map((n) => n.metadata.name),
    nodesQuarantined: i.nodes
      .filter((n) => state(n) === 'quarantined' || n.metadata.annotations?.['gpu-reflex.io/quarantined-gpus'])
      .map((n) => n.metadata.name),
    // Without the simulated cluster's change feed (--kubeconfig), evictions are what the functions report done.
    podsEvicted: i.observed ? i.counters.evicted.length : t.evictionsDone,
    podsRescheduled: i.counters.rescheduled.length,
    podsPending: pendingByResource(i.pods),
    deliveryFailures: { ...t.deliveryFailures },
    deadLetters: i.deadLetters,
  };
}

/** Each `expect` entry of the scenario against the final state and the events. */
function bounds(atLeast: number | undefined, atMost: number | undefined): string {
  if (atLeast !== undefined && atMost !== undefined)
    return atLeast === atMost ? `exactly ${atLeast}` : `${atLeast} to ${atMost}`;
  return atLeast !== undefined ? `at least ${atLeast}` : `at most ${atMost}`;
}

export function checkExpectations(
  expect: readonly Expectation[],
  nodes: readonly Node[],
  pods: readonly Pod[],
  events: Pick<EventTally, 'count' | 'remediationCount'>,
): NonNullable<Summary['expectations']> {
  return expect.map((x) => {
    if ('pendingPods' in x) {
      const { resource, atLeast, atMost } = x.pendingPods;
      const n = pendingByResource(pods)[resource] ?? 0;
      return {
        check: `${bounds(atLeast, atMost)} pods pending on ${resource}`,
        ok: (atLeast === undefined || n >= atLeast) && (atMost === undefined || n <= atMost),
        detail: `${n} pending`,
      };
    }
    if ('nodes' in x) {
      const { selector, atLeast, atMost } = x.nodes;
      const n = nodes.filter(
        (node) =>
          Object.entries(selector).every(([k, v]) => node.metadata.labels?.[k] === v) &&
          node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
      ).length;
      const sel = Object.entries(selector)
        .map(([k, v]) => `${k}=${v}`)
        .join(',');
      return {
        check: `${bounds(atLeast, atMost)} ready nodes with ${sel}`,
        ok: (atLeast === undefined || n >= atLeast) && (atMost === undefined || n <= atMost),
        detail: `${n} ready`,
      };
    }
    if ('running' in x) {
      const { namespace, node, atLeast, atMost } = x.running;
      const n = pods.filter(
        (p) =>
          p.metadata.namespace === namespace &&
          !!p.spec.nodeName &&
          (node === undefined || p.spec.nodeName === node) &&
          !p.metadata.deletionTimestamp &&
          p.status?.phase !== 'Succeeded' &&
          p.status?.phase !== 'Failed',
      ).length;
      return {
        check: `${bounds(atLeast, atMost)} pods of ${namespace} running${node ? ` on ${node}` : ''}`,
        ok: (atLeast === undefined || n >= atLeast) && (atMost === undefined || n <= atMost),
        detail: `${n} running`,
      };
    }
    if ('runningPods' in x) {
      const { selector, atLeast, atMost } = x.runningPods;
      const n = pods.filter(
        (p) =>
          Object.entries(selector).every(([k, v]) => p.metadata.labels?.[k] === v) &&
          p.status?.phase === 'Running' &&
          !p.metadata.deletionTimestamp,
      ).length;
      const sel = Object.entries(selector)
        .map(([k, v]) => `${k}=${v}`)
        .join(',');
      return {
        check: `${bounds(atLeast, atMost)} running pods with ${sel}`,
        ok: (atLeast === undefined || n >= atLeast) && (atMost === undefined || n <= atMost),
        detail: `${n} running`,
      };
    }
    if ('remediation' in x) {
      const { node, action, profile, atLeast, atMost } = x.remediation;
      const n = events.remediationCount(node, action, profile);
      const what = [action, profile !== undefined ? `by profile ${profile || '(none)'}` : ''].filter(Boolean).join(' ');
      return {
        check: `${bounds(atLeast, atMost)} Remediation ${what} on ${node}`,
        ok: (atLeast === undefined || n >= atLeast) && (atMost === undefined || n <= atMost),
        detail: `${n} seen`,
      };
    }
    if ('event' in x) {
      const n = events.count(x.event, x.node, x.says);
      const least = x.atLeast ?? (x.atMost === undefined ? 1 : undefined);
      return {
        check:
          `${bounds(least, x.atMost)} ` +
          `"${x.event}"${x.node ? ` from ${x.node}` : ''}${x.says ? ` saying "${x.says}"` : ''}`,
        ok: (least === undefined || n >= least) && (x.atMost === undefined || n <= x.atMost),
        detail: `${n} seen`,
      };
    }
    const node = nodes.find((n) => n.metadata.name === x.node);
    if (x.absent)
      return { check: `node ${x.node} is gone`, ok: !node, detail: node ? 'still in the cluster' : 'as expected' };
    if (!node) return { check: `node ${x.node}`, ok: false, detail: 'no such node' };
    const problems: string[] = [];
    if (x.cordoned !== undefined && !!node.spec?.unschedulable !== x.cordoned)
      problems.push(x.cordoned ? 'not cordoned' : 'cordoned');
    if (x.tainted !== undefined && !(node.spec?.taints ?? []).some((t) => t.key === x.tainted))
      problems.push(`no taint ${x.tainted}`);
    if (x.notTainted !== undefined && (node.spec?.taints ?? []).some((t) => t.key === x.notTainted))
      problems.push(`tainted ${x.notTainted}`);
    for (const [k, v] of Object.entries(x.label ?? {}))
      if (node.metadata.labels?.[k] !== v)
        problems.push(`label ${k} is ${node.metadata.labels?.[k] ?? 'unset'}, not ${v}`);
    for (const [k, v] of Object.entries(x.allocatable ?? {})) {
      const have = node.status?.allocatable?.[k];
      if (have === undefined || parseQuantity(have) !== parseQuantity(v))
        problems.push(`allocatable ${k} is ${have ?? 'absent'}, not ${v}`);
    }
    const wanted = [
      x.cordoned !== undefined ? (x.cordoned ? 'cordoned' : 'schedulable') : '',
      x.tainted ? `tainted ${x.tainted}` : '',
      x.notTainted ? `not tainted ${x.notTainted}` : '',
      ...Object.entries(x.label ?? {}).map(([k, v]) => `${k}=${v}`),
      ...Object.entries(x.allocatable ?? {}).map(([k, v]) => `allocatable ${k} ${v}`),
    ]
      .filter(Boolean)
      .join(', ');
    return {
      check: `node ${x.node} ${wanted}`,
      ok: problems.length === 0,
      detail: problems.length ? problems.join('; ') : 'as expected',
    };
  });
}
