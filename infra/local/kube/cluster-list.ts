import { errors, type ApiError } from './errors.ts';
import { qualifiedName, type ResourceDef } from './resources.ts';
import { parseFieldSelector, parseLabelSelector } from './selectors.ts';
import type { Store } from './store.ts';
import type { KubeObject } from './types.ts';

/**
 * A list as the API server answers it: label and field selectors (400 when they do not parse), items in
 * namespace/name order, and `limit`/`continue` paging with the continue token apimachinery's shape
 * (`{v, rv, start}`, base64url) and `remainingItemCount`.
 */
export interface ListOptions {
  labelSelector?: string;
  fieldSelector?: string;
  limit?: number;
  continue?: string;
}

export interface ListResult {
  items: KubeObject[];
  resourceVersion: string;
  continue?: string;
  remainingItemCount?: number;
}

function badRequest(err: unknown): ApiError {
  return errors.badRequest(err instanceof Error ? err.message : String(err));
}

/** One page of the objects of `r` (in `ns`, when namespaced and given) the selectors pick, as stored. */
export function selectPage(store: Store, r: ResourceDef, ns: string | undefined, opts: ListOptions): ListResult {
  let labels, fields;
  try {
    labels = opts.labelSelector ? parseLabelSelector(opts.labelSelector) : [];
    fields = opts.fieldSelector ? parseFieldSelector(opts.fieldSelector) : [];
  } catch (err) {
    throw badRequest(err);
  }
  // The store's indexes (label, field, namespace) pick the candidates; only matches come back.
  let items = store.select(qualifiedName(r), {
    ...(r.namespaced && ns !== undefined ? { namespace: ns } : {}),
    labels,
    fields,
  });
  const key = (o: KubeObject) => `${o.metadata.namespace ?? ''}/${o.metadata.name}`;
  items.sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
  const rv = String(store.resourceVersion);
  if (opts.continue) {
    let after: string;
    try {
      after = (JSON.parse(Buffer.from(opts.continue, 'base64url').toString('utf8')) as { start: string }).start;
    } catch {
      throw errors.badRequest('continue key is not valid: illegal base64 data');
    }
    items = items.filter((o) => key(o) > after);
  }
  const result: ListResult = { items, resourceVersion: rv };
  if (opts.limit && opts.limit > 0 && items.length > opts.limit) {
    result.items = items.slice(0, opts.limit);
    result.remainingItemCount = items.length - opts.limit;
    result.continue = Buffer.from(
      JSON.stringify({ v: 'meta.k8s.io/v1', rv: Number(rv), start: key(result.items[result.items.length - 1]!) }),
    ).toString('base64url');
  }
  return result;
}
