/**
 * In-memory NodeOps and PodOps over a FakeCluster, keeping the ports' contracts: idempotent
 * writes that resolve whether they changed anything, NotFoundError for a missing node, eviction
 * that honours PodDisruptionBudgets and grace periods and answers `blocked` / `gone`.
 */
import { ConflictError, NotFoundError } from '../errors.ts';
import type { FakeCluster, FakePdb } from './fake-cluster.ts';
import { injected } from './fake-cluster.ts';
import { mergeStringMap, nodeDelta, sameCondition, withTaint, withoutTaint, type NodeChange } from './node-change.ts';
import type { EvictResult, NodeCondition, NodeInfo, NodeMeta, PodInfo, Taint, TaintEffect } from './model.ts';
import type { EvictOptions, NodeOps, NodeUpdateOptions, PodOps, PodQuery } from './ports.ts';

/** `a=b,c!=d,e` label selectors, the subset the fakes need (no set-based `in (...)`). */
export function matchesSelector(labels: Record<string, string>, selector: string | undefined): boolean {
  if (selector === undefined || selector.trim() === '') return true;
  return selector.split(',').every((term) => {
    const t = term.trim();
    if (t.startsWith('!')) return !(t.slice(1) in labels);
    const neq = t.indexOf('!=');
    if (neq >= 0) return labels[t.slice(0, neq)] !== t.slice(neq + 2);
    const eq = t.indexOf('=');
    if (eq < 0) return t in labels;
    const key = t.slice(0, eq);
    const value = t.slice(t[eq + 1] === '=' ? eq + 2 : eq + 1);
    return labels[key] === value;
  });
}

export class FakeNodeOps implements NodeOps {
  constructor(readonly cluster: FakeCluster) {}

  async get(name: string): Promise<NodeInfo> {
    this.begin('nodes.get', [name], `reading node ${name}`);
    return structuredClone(this.node(name));
  }

  async list(labelSelector?: string): Promise<NodeInfo[]> {
    this.begin('nodes.list', [labelSelector], 'listing nodes');
    return [...this.cluster.nodes.values()]
      .filter((n) => matchesSelector(n.labels, labelSelector))
      .map((n) => structuredClone(n));
  }

  async listMetadata(labelSelector?: string): Promise<NodeMeta[]> {
    this.begin('nodes.listMetadata', [labelSelector], 'listing node metadata');
    return [...this.cluster.nodes.values()]
      .filter((n) => matchesSelector(n.labels, labelSelector))
      .map((n) => ({ name: n.name, labels: { ...n.labels }, annotations: { ...n.annotations } }));
  }

  async setCondition(name: string, condition: NodeCondition): Promise<boolean> {
    this.begin('nodes.setCondition', [name, condition], `setting condition ${condition.type} on node ${name}`, true);
    return this.write(name, (n) => {
      if (sameCondition(n.conditions?.[condition.type], condition)) return false;
      n.conditions = { ...(n.conditions ?? {}), [condition.type]: { ...condition } };
      return true;
    });
  }

  async cordon(name: string): Promise<boolean> {
    this.begin('nodes.cordon', [name], `cordoning node ${name}`);
    return this.write(name, (n) => (n.unschedulable ? false : ((n.unschedulable = true), true)));
  }

  async uncordon(name: string): Promise<boolean> {
    this.begin('nodes.uncordon', [name], `uncordoning node ${name}`);
    return this.write(name, (n) => (n.unschedulable ? ((n.unschedulable = false), true) : false));
  }

  async addTaint(name: string, taint: Taint): Promise<boolean> {
    this.begin('nodes.addTaint', [name, taint], `tainting node ${name}`, true);
    return this.write(name, (n) => {
      const next = withTaint(n.taints, taint);
      // withTaint keeps the existing entries and adds ours as given: all are Taints.
      if (next !== undefined) n.taints = next as Taint[];
      return next !== undefined;
    });
  }

  async removeTaint(name: string, key: string, effect?: TaintEffect): Promise<boolean> {
    this.begin('nodes.removeTaint', [name, key, effect], `untainting node ${name}`, true);
    return this.write(name, (n) => {
      const next = withoutTaint(n.taints, key, effect);
      if (next !== undefined) n.taints = next as Taint[];
      return next !== undefined;
    });
  }

  async setLabels(name: string, labels: Record<string, string | null>): Promise<boolean> {
    this.begin('nodes.setLabels', [name, labels], `labelling node ${name}`, true);
    return this.write(name, (n) => applyMap(n.labels, labels));
  }

  async setAnnotations(name: string, annotations: Record<string, string | null>): Promise<boolean> {
    this.begin('nodes.setAnnotations', [name, annotations], `annotating node ${name}`, true);
    return this.write(name, (n) => applyMap(n.annotations, annotations));
  }

  async update(name: string, change: NodeChange, options: NodeUpdateOptions = {}): Promise<boolean> {
    // Recorded with the change only, as before: options say how, not what.
    this.begin('nodes.update', [name, change], `updating node ${name}`, options.basis === undefined && !options.blind);
    if (options.blind && (change.addTaints?.length || change.removeTaints?.length))
      throw new Error(`updating node ${name}: a blind update cannot change taints`);
    if (options.basis && this.node(name).resourceVersion !== options.basis.resourceVersion) {
      throw new ConflictError(`updating node ${name}: the object has been modified`, {
        what: `node ${name}`,
        status: 409,
      });
    }
    return this.write(name, (n) => {
      const d = nodeDelta(n, change);
      if (!d) return false;
      if (d.taints) n.taints = d.taints as Taint[];
      if (d.unschedulable !== undefined) n.unschedulable = d.unschedulable;
      if (d.labels) applyMap(n.labels, d.labels);
      if (d.annotations) applyMap(n.annotations, d.annotations);
      return true;
    });
  }

  private begin(op: string, args: unknown[], what: string, retriesConflicts = false): void {
    this.cluster.record(op, args);
    this.cluster.guard(op, what, retriesConflicts);
  }

  private node(name: string): NodeInfo {
    const n = this.cluster.nodes.get(name);
    if (n === undefined)
      throw new NotFoundError(`reading node ${name}: nodes "${name}" not found`, { what: `node ${name}`, status: 404 });
    return n;
  }

  private write(name: string, change: (n: NodeInfo) => boolean): boolean {
    const n = this.node(name);
    const changed = change(n);
    if (changed) n.resourceVersion = this.cluster.nextResourceVersion();
    return changed;
  }
}

function applyMap(target: Record<string, string>, changes: Record<string, string | null>): boolean {
  const patch = mergeStringMap(target, changes);
  if (patch === undefined) return false;
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete target[k];
    else target[k] = v;
  }
  return true;
}

/** Why a PDB forbids evicting `pod` now, or undefined when it allows it. */
export function pdbRefusal(pdb: FakePdb, pod: PodInfo, all: PodInfo[]): string | undefined {
  if (pdb.namespace !== pod.namespace || !matchesAll(pod.labels, pdb.matchLabels)) return undefined;
  const matching = all.filter((p) => p.namespace === pdb.namespace && matchesAll(p.labels, pdb.matchLabels));
  const healthy = matching.filter((p) => !p.terminating && p.phase === 'Running').length;
  const podHealthy = !pod.terminating && pod.phase === 'Running';
  const after = podHealthy ? healthy - 1 : healthy;
  const unavailableAfter = matching.length - after;
  if (pdb.minAvailable !== undefined && after < pdb.minAvailable) {
    return (
      `Cannot evict pod as it would violate the pod's disruption budget (minAvailable ${pdb.minAvailable}, ` +
      `healthy ${healthy}).`
    );
  }
  if (pdb.maxUnavailable !== undefined && unavailableAfter > pdb.maxUnavailable) {
    return `Cannot evict pod as it would violate the pod's disruption budget (maxUnavailable ${pdb.maxUnavailable}).`;
  }
  return undefined;
}

function matchesAll(labels: Record<string, string>, want: Record<string, string>): boolean {
  return Object.entries(want).every(([k, v]) => labels[k] === v);
}

export class FakePodOps implements PodOps {
  constructor(readonly cluster: FakeCluster) {}

  async listOnNode(node: string): Promise<PodInfo[]> {
    this.cluster.record('pods.listOnNode', [node]);
    this.cluster.guard('pods.listOnNode', `listing pods on ${node}`, false);
    return this.cluster.pods().filter((p) => p.nodeName === node);
  }

  async list(query: PodQuery = {}): Promise<PodInfo[]> {
    this.cluster.record('pods.list', [query]);
    this.cluster.guard('pods.list', 'listing pods', false);
    if (query.fieldSelector !== undefined)
      throw new Error('FakePodOps.list: fieldSelector is not modelled; use listOnNode');
    return this.cluster
      .pods()
      .filter(
        (p) =>
          (query.namespace === undefined || p.namespace === query.namespace) &&
          matchesSelector(p.labels, query.labelSelector),
      );
  }

  async evict(namespace: string, name: string, options: EvictOptions = {}): Promise<EvictResult> {
    this.cluster.record('pods.evict', [namespace, name, options]);
    const status = this.cluster.takeFailure('pods.evict');
    if (status === 404) return { outcome: 'gone' };
    if (status === 429) return { outcome: 'blocked', reason: 'injected 429' };
    if (status !== undefined) throw injected(status, `evicting pod ${namespace}/${name}`);
    const pod = this.cluster.pod(namespace, name);
    if (pod === undefined) return { outcome: 'gone' };
    if (options.uid !== undefined && pod.uid !== options.uid) return { outcome: 'gone' };
    if (pod.terminating) return { outcome: 'evicted' };
    const all = this.cluster.pods();
    for (const pdb of this.cluster.pdbs) {
      const reason = pdbRefusal(pdb, pod, all);
      if (reason !== undefined) return { outcome: 'blocked', reason };
    }
    this.cluster.terminate(pod, options.gracePeriodSeconds);
    return { outcome: 'evicted' };
  }
}
