import { matchesFields, matchesRequirements, type FieldRequirement, type Requirement } from './selectors.ts';
import { ResourceIndex } from './store-index.ts';
import type { KubeObject, Node, Pod } from './types.ts';

/**
 * The in-memory object store: one global resourceVersion counter (like etcd's revision), objects
 * by resource → namespace → name, secondary indexes by label and by the selectable fields
 * (store-index.ts: pods by node, events by involved object, any object by name), and a bounded
 * history of changes so a watch can resume from a resourceVersion.
 *
 * Tests may read it directly (`store.node('gpu-1')`); all mutation from product code goes over
 * HTTP. Returned objects are shared snapshots: never mutate them.
 */
export type WatchType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface StoreEvent {
  type: WatchType;
  /** Qualified resource name: `pods`, `poddisruptionbudgets.policy`. */
  resource: string;
  object: KubeObject;
  /** The object before this change (MODIFIED and DELETED). Lets listeners diff. */
  previous?: KubeObject;
  rv: number;
}

const HISTORY = 50_000;

/** What a list selects: a namespace (none: all), label and field requirements (all must hold). */
export interface Selection {
  namespace?: string;
  labels?: readonly Requirement[];
  fields?: readonly FieldRequirement[];
}

export class Store {
  private rv = 1;
  private readonly data = new Map<string, Map<string, Map<string, KubeObject>>>();
  private readonly indexes = new Map<string, ResourceIndex>();
  private readonly history: StoreEvent[] = [];
  private readonly listeners = new Set<(e: StoreEvent) => void>();

  /** The latest resourceVersion handed out. */
  get resourceVersion(): number {
    return this.rv;
  }

  get(resource: string, namespace: string, name: string): KubeObject | undefined {
    return this.data.get(resource)?.get(namespace)?.get(name);
  }

  /** All objects of a resource, in one namespace or all of them. Unordered. */
  list(resource: string, namespace?: string): KubeObject[] {
    const byNs = this.data.get(resource);
    if (!byNs) return [];
    if (namespace !== undefined) return [...(byNs.get(namespace)?.values() ?? [])];
    const out: KubeObject[] = [];
    for (const m of byNs.values()) for (const o of m.values()) out.push(o);
    return out;
  }

  /**
   * The objects of a resource that match `sel`, unordered. Starts from the smallest of: the
   * namespace, an indexed label or field requirement's set, or everything; then applies the whole
   * selection, so the answer is the plain scan's (store-index.test.ts holds it to that).
   */
  select(resource: string, sel: Selection = {}): KubeObject[] {
    const byNs = this.data.get(resource);
    if (!byNs) return [];
    const labels = sel.labels ?? [];
    const fields = sel.fields ?? [];
    const ns = sel.namespace;
    const inNs = ns === undefined ? undefined : byNs.get(ns);
    if (ns !== undefined && !inNs) return [];
    const indexed = this.indexes.get(resource)?.narrowest(labels, fields);
    const matches = (o: KubeObject) => matchesRequirements(o.metadata.labels, labels) && matchesFields(o, fields);
    const out: KubeObject[] = [];
    if (indexed && indexed.size < (inNs?.size ?? Number.POSITIVE_INFINITY)) {
      for (const bucket of indexed.buckets)
        for (const o of bucket.values())
          if ((ns === undefined || (o.metadata.namespace ?? '') === ns) && matches(o)) out.push(o);
      return out;
    }
    for (const m of inNs ? [inNs] : byNs.values()) for (const o of m.values()) if (matches(o)) out.push(o);
    return out;
  }

  count(resource: string): number {
    let n = 0;
    for (const m of this.data.get(resource)?.values() ?? []) n += m.size;
    return n;
  }

  /** Pods whose spec.nodeName is `node`, from the index (O(pods on the node)). */
  podsOnNode(node: string): Pod[] {
    if (node === '') return [];
    return (this.indexes.get('pods')?.byField('spec.nodeName', node) ?? []) as Pod[];
  }

  /** Stores `obj` under a fresh resourceVersion (set on a copy of its metadata) and notifies. */
  put(resource: string, obj: KubeObject): KubeObject {
    const ns = obj.metadata.namespace ?? '';
    const prev = this.get(resource, ns, obj.metadata.name);
    this.rv++;
    const stored: KubeObject = { ...obj, metadata: { ...obj.metadata, resourceVersion: String(this.rv) } };
    let byNs = this.data.get(resource);
    if (!byNs) this.data.set(resource, (byNs = new Map()));
    let byName = byNs.get(ns);
    if (!byName) byNs.set(ns, (byName = new Map()));
    byName.set(obj.metadata.name, stored);
    this.indexOf(resource).update(prev, stored);
    this.emit({
      type: prev ? 'MODIFIED' : 'ADDED',
      resource,
      object: stored,
      ...(prev ? { previous: prev } : {}),
      rv: this.rv,
    });
    return stored;
  }

  /** Removes an object; the DELETED event carries the object at a new resourceVersion. */
  remove(resource: string, namespace: string, name: string): KubeObject | undefined {
    const byName = this.data.get(resource)?.get(namespace);
    const prev = byName?.get(name);
    if (!byName || !prev) return undefined;
    byName.delete(name);
    this.indexOf(resource).update(prev, undefined);
    this.rv++;
    const gone: KubeObject = { ...prev, metadata: { ...prev.metadata, resourceVersion: String(this.rv) } };
    this.emit({ type: 'DELETED', resource, object: gone, previous: prev, rv: this.rv });
    return gone;
  }

  subscribe(fn: (e: StoreEvent) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** Changes after `rv`, or undefined when the history no longer reaches back that far (410). */
  eventsSince(rv: number): StoreEvent[] | undefined {
    const first = this.history[0];
    if (rv >= this.rv) return [];
    if (!first || first.rv > rv + 1) return undefined;
    let lo = 0;
    let hi = this.history.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.history[mid]!.rv <= rv) lo = mid + 1;
      else hi = mid;
    }
    return this.history.slice(lo);
  }

  // Conveniences for tests and the CLI.
  node(name: string): Node | undefined {
    return this.get('nodes', '', name) as Node | undefined;
  }
  nodes(): Node[] {
    return this.list('nodes') as Node[];
  }
  pod(namespace: string, name: string): Pod | undefined {
    return this.get('pods', namespace, name) as Pod | undefined;
  }
  pods(namespace?: string): Pod[] {
    return this.list('pods', namespace) as Pod[];
  }

  private indexOf(resource: string): ResourceIndex {
    let index = this.indexes.get(resource);
    if (!index) this.indexes.set(resource, (index = new ResourceIndex(resource)));
    return index;
  }

  private emit(e: StoreEvent): void {
    this.history.push(e);
    // Trim in chunks: splicing one element per write would make every write O(history).
    if (this.history.length > HISTORY + 10_000) this.history.splice(0, this.history.length - HISTORY);
    for (const fn of this.listeners) fn(e);
  }
}
