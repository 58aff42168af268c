/**
 * Can a pod ever run on a node of this pool? The scheduler's static checks, on a node that does
 * not exist yet: nodeSelector, required node affinity, taints and tolerations, and whether one
 * node offers enough of every resource the pod requests, and on cGPU nodes one card enough of
 * its share (cards.ts). Each rule names the Kubernetes source it follows; the simulated scheduler
 * (infra/local/kube) was written apart from the same sources, and
 * test/contract/scheduler-agreement.test.ts holds the two together. Pure; the reason is said in
 * words when the answer is no.
 */
import type { Taint } from '../../adapters/kube/model.ts';
import { whyNotOnCards } from './cards.ts';

export type Resources = Readonly<Record<string, number>>;

export interface Toleration {
  key?: string;
  operator?: 'Exists' | 'Equal';
  value?: string;
  effect?: string;
}

export interface MatchExpression {
  key: string;
  operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist' | 'Gt' | 'Lt';
  values?: readonly string[];
}

export interface SelectorTerm {
  matchExpressions: readonly MatchExpression[];
  /** Requirements on the node's fields: Kubernetes knows only `metadata.name`. */
  matchFields?: readonly MatchExpression[];
}

export interface PodConstraints {
  /** cpu in millicores, memory in bytes, extended resources in their own units. */
  requests: Resources;
  nodeSelector?: Readonly<Record<string, string>>;
  /** requiredDuringScheduling node selector terms: any one term, every requirement in it. */
  requiredTerms?: readonly SelectorTerm[];
  tolerations?: readonly Toleration[];
}

export interface NodeTemplate {
  labels: Readonly<Record<string, string>>;
  taints: readonly Taint[];
  /** What one node offers to pods (allocatable). */
  allocatable: Resources;
  /** The node's name (for `matchFields`); unset for a node yet to be bought, whose name no pod can name. */
  name?: string;
  /**
   * ACK cGPU (gpushare) nodes: what each card has free. A pod's `aliyun.com/gpu-mem` (and
   * `aliyun.com/gpu-core.percentage`) must fit on one card; the node's total says nothing more.
   */
  cards?: readonly GpuCard[];
  /** Why the node's GPUs cannot be fitted at all (a sharing mode gpu-reflex does not know); unset when they can. */
  gpuUnknown?: string;
  /**
   * NVIDIA time-slicing with `failRequestsGreaterThanOne`: the resource a pod may ask at most one
   * of; more ends in UnexpectedAdmissionError on the node (NVIDIA/k8s-device-plugin README).
   */
  atMostOne?: string;
}

/** One card of a cGPU node: free memory in GiB (`aliyun.com/gpu-mem` units) and free core share (percent). */
export interface GpuCard {
  memory: number;
  core: number;
}

/**
 * Does one toleration tolerate a taint (k8s.io/api/core/v1/toleration.go `ToleratesTaint`; API
 * validation lets an empty key only with `Exists`)?
 */
export function tolerates(
  t: { key?: string; operator?: string; value?: string; effect?: string },
  taint: { key: string; value?: string; effect: string },
): boolean {
  if (t.effect && t.effect !== taint.effect) return false;
  if (t.key === undefined || t.key === '') return t.operator === 'Exists';
  if (t.key !== taint.key) return false;
  return t.operator === 'Exists' || (t.value ?? '') === (taint.value ?? '');
}

/** strconv.ParseInt(s, 10, 64): an optional sign and decimal digits, within int64; anything else is no integer. */
function int64(s: string | undefined): bigint | undefined {
  if (s === undefined || !/^[+-]?[0-9]+$/.test(s)) return undefined;
  const n = BigInt(s);
  return n >= -(2n ** 63n) && n < 2n ** 63n ? n : undefined;
}

/**
 * Does a node selector requirement hold for the value its key has (undefined: the label is
 * absent)? k8s.io/apimachinery/pkg/labels/selector.go `NewRequirement` and `Requirement.Matches`:
 * `Gt`/`Lt` take exactly one bound that ParseInt reads (else the requirement is an error, and its
 * term selects nothing), and hold only for a label value ParseInt reads: `1e3`, `''` or `4.0` are
 * no integers, whatever JavaScript's Number() makes of them.
 */
export function expressionHolds(e: { operator: string; values?: readonly string[] }, v: string | undefined): boolean {
  const values = e.values ?? [];
  switch (e.operator) {
    case 'In':
      return v !== undefined && values.includes(v);
    case 'NotIn':
      return v === undefined || !values.includes(v);
    case 'Exists':
      return v !== undefined;
    case 'DoesNotExist':
      return v === undefined;
    case 'Gt':
    case 'Lt': {
      const bound = values.length === 1 ? int64(values[0]) : undefined;
      const n = int64(v);
      if (bound === undefined || n === undefined) return false;
      return e.operator === 'Gt' ? n > bound : n < bound;
    }
    default:
      return false;
  }
}

/**
 * A matchFields requirement: only `metadata.name`, only `In`/`NotIn`, exactly one value; anything
 * else is a parse error and its term selects nothing (nodeaffinity.go
 * `nodeSelectorRequirementsAsFieldSelector`). A node still to be bought has a name no pod can
 * name yet: `In` never holds on it, `NotIn` always does (a pod pinned to an existing node, as the
 * DaemonSet controller pins its pods, is no reason to buy one).
 */
function fieldHolds(e: MatchExpression, name: string | undefined): boolean {
  const values = e.values ?? [];
  if (e.key !== 'metadata.name' || values.length !== 1) return false;
  if (e.operator === 'In') return name !== undefined && name === values[0];
  if (e.operator === 'NotIn') return name === undefined || name !== values[0];
  return false;
}

/** A label's value; own keys only (a label named `constructor` is not Object.prototype's). */
const labelOf = (labels: Readonly<Record<string, string>>, key: string) =>
  Object.hasOwn(labels, key) ? labels[key] : undefined;

/**
 * nodeaffinity.go `nodeSelectorTerm.match` via `NewLazyErrorNodeSelector`: a nil or empty term
 * (no matchExpressions and no matchFields) selects no node; otherwise every requirement holds.
 */
export function termHolds(t: SelectorTerm, node: Pick<NodeTemplate, 'labels' | 'name'>): boolean {
  const fields = t.matchFields ?? [];
  if (t.matchExpressions.length === 0 && fields.length === 0) return false;
  return (
    t.matchExpressions.every((e) => expressionHolds(e, labelOf(node.labels, e.key))) &&
    fields.every((f) => fieldHolds(f, node.name))
  );
}

/** What every node offers whatever its GPUs: a pod asking only for these never waits on a GPU mode. */
const CORE_RESOURCES = new Set(['cpu', 'memory', 'pods', 'ephemeral-storage']);

/** Undefined when the pod fits a node of this template; otherwise why not. */
export function whyNot(pod: PodConstraints, node: NodeTemplate): string | undefined {
  for (const [k, v] of Object.entries(pod.nodeSelector ?? {})) {
    const has = labelOf(node.labels, k);
    if (has !== v)
      return `nodeSelector ${k}=${v} (the pool's nodes have ${has === undefined ? `no ${k}` : `${k}=${has}`})`;
  }
  const terms = pod.requiredTerms ?? [];
  if (terms.length > 0 && !terms.some((t) => termHolds(t, node)))
    return 'required node affinity matches none of its labels';
  for (const taint of node.taints) {
    if (taint.effect !== 'NoSchedule' && taint.effect !== 'NoExecute') continue;
    if (!(pod.tolerations ?? []).some((t) => tolerates(t, taint)))
      return `taint ${taint.key}${taint.value ? `=${taint.value}` : ''}:${taint.effect} not tolerated`;
  }
  if (node.gpuUnknown && Object.entries(pod.requests).some(([r, v]) => v > 0 && !CORE_RESOURCES.has(r)))
    return node.gpuUnknown;
  const shared = node.atMostOne ? (pod.requests[node.atMostOne] ?? 0) : 0;
  if (shared > 1) return `asks for ${shared} ${node.atMostOne}; time-sliced nodes fail requests above 1`;
  for (const [r, want] of Object.entries(pod.requests)) {
    if (want <= 0) continue;
    const has = node.allocatable[r] ?? 0;
    if (want > has) return has === 0 ? `no ${r} on its nodes` : `needs ${want} ${r}, a node offers ${has}`;
  }
  return whyNotOnCards(pod.requests, node);
}
