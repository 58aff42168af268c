import { fieldValue, type FieldRequirement, type Requirement } from './selectors.ts';
import type { KubeObject } from './types.ts';

/**
 * Secondary indexes of one resource's objects, kept in step with every write: label key → value →
 * objects, and field → value → objects for the fields clients select on (the real API server's
 * watch cache indexes `spec.nodeName` for pods the same way). A selected list then starts from the
 * smallest set that must contain every match instead of scanning the whole resource: a storm on a
 * 10,000-node fleet lists one pool's 100 nodes by label, and one node's pods, per remediation.
 *
 * The index only narrows; the caller still applies the full selector to what it returns, so an
 * index can never change an answer, only how much is looked at.
 */
type Bucket = Map<string, KubeObject>;
type ByValue = Map<string, Bucket>;

/** Indexed fields per resource; `metadata.name` everywhere (a name across namespaces). */
const INDEXED_FIELDS: Record<string, readonly string[]> = {
  pods: ['metadata.name', 'spec.nodeName'],
  events: ['metadata.name', 'involvedObject.name', 'involvedObject.uid'],
};
const DEFAULT_FIELDS = ['metadata.name'] as const;

export const refOf = (o: KubeObject) => `${o.metadata.namespace ?? ''}/${o.metadata.name}`;

function add(index: Map<string, ByValue>, key: string, value: string, ref: string, obj: KubeObject): void {
  let byValue = index.get(key);
  if (!byValue) index.set(key, (byValue = new Map()));
  let bucket = byValue.get(value);
  if (!bucket) byValue.set(value, (bucket = new Map()));
  bucket.set(ref, obj);
}

function drop(index: Map<string, ByValue>, key: string, value: string, ref: string): void {
  const byValue = index.get(key);
  const bucket = byValue?.get(value);
  if (!bucket) return;
  bucket.delete(ref);
  if (bucket.size === 0) byValue!.delete(value);
  if (byValue!.size === 0) index.delete(key);
}

/** A set of candidate objects and how many there are, so the smallest can be chosen before walking any. */
interface Candidates {
  size: number;
  buckets: Iterable<Bucket>;
}

export class ResourceIndex {
  private readonly labels = new Map<string, ByValue>();
  private readonly fields = new Map<string, ByValue>();
  private readonly indexedFields: readonly string[];

  constructor(resource: string) {
    this.indexedFields = INDEXED_FIELDS[resource] ?? DEFAULT_FIELDS;
  }

  /** Moves `ref` from what `prev` was indexed under to what `next` is (either may be absent). */
  update(prev: KubeObject | undefined, next: KubeObject | undefined): void {
    const ref = refOf((next ?? prev)!);
    const before = prev?.metadata.labels ?? {};
    const after = next?.metadata.labels ?? {};
    for (const [k, v] of Object.entries(before)) if (after[k] !== v) drop(this.labels, k, v, ref);
    // Re-add every label even when unchanged: the bucket must hold the new object, not the old.
    if (next) for (const [k, v] of Object.entries(after)) add(this.labels, k, v, ref, next);
    for (const f of this.indexedFields) {
      const was = prev ? fieldValue(prev, f) : undefined;
      const now = next ? fieldValue(next, f) : undefined;
      if (was !== undefined && was !== now) drop(this.fields, f, was, ref);
      if (now !== undefined && next) add(this.fields, f, now, ref, next);
    }
  }

  /** Objects whose indexed `field` equals `value`, in insertion order. */
  byField(field: string, value: string): KubeObject[] {
    return [...(this.fields.get(field)?.get(value)?.values() ?? [])];
  }

  /**
   * The smallest indexed set that holds every object matching the requirements, or undefined when
   * no requirement can use an index (`notin`, `!exists`, `gt`/`lt`, `!=` and unindexed fields).
   */
  narrowest(labels: readonly Requirement[], fields: readonly FieldRequirement[]): Candidates | undefined {
    let best: Candidates | undefined;
    const consider = (c: Candidates) => {
      if (!best || c.size < best.size) best = c;
    };
    for (const r of labels) {
      const byValue = this.labels.get(r.key);
      if (r.op === 'in') {
        // An object has one value per key, so the buckets of distinct values never overlap.
        const buckets = [...new Set(r.values)].map((v) => byValue?.get(v)).filter((b): b is Bucket => b !== undefined);
        consider({ size: buckets.reduce((n, b) => n + b.size, 0), buckets });
      } else if (r.op === 'exists') {
        const buckets = [...(byValue?.values() ?? [])];
        consider({ size: buckets.reduce((n, b) => n + b.size, 0), buckets });
      }
    }
    for (const r of fields) {
      if (!r.equal || !this.indexedFields.includes(r.field)) continue;
      const bucket = this.fields.get(r.field)?.get(r.value);
      consider({ size: bucket?.size ?? 0, buckets: bucket ? [bucket] : [] });
    }
    return best;
  }
}
