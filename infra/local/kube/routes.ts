import { apiGroup, apiGroupList, apiResourceList } from './discovery.ts';
import type { ServedApis } from './api-versions.ts';
import type { ResourceDef } from './resources.ts';

/**
 * The Kubernetes REST paths (server.ts): which served kind, namespace, name and subresource a path names,
 * or the discovery document it asks for.
 */

export interface Route {
  r: ResourceDef;
  ns?: string;
  name?: string;
  sub?: string;
  watch: boolean;
}

/** Splits the path into a resource route, or returns a discovery document / undefined. */
export function route(apis: ServedApis, segs: string[]): Route | { doc: object } | undefined {
  let gv: string;
  let rest: string[];
  if (segs[0] === 'api') {
    if (segs.length === 1) return undefined; // handled by the caller (needs host)
    if (segs[1] !== 'v1') return undefined;
    gv = 'v1';
    rest = segs.slice(2);
  } else if (segs[0] === 'apis') {
    if (segs.length === 1) return { doc: apiGroupList(apis) };
    const g = apiGroup(apis, segs[1]!);
    if (segs.length === 2) return g ? { doc: g } : undefined;
    gv = `${segs[1]}/${segs[2]}`;
    rest = segs.slice(3);
  } else return undefined;
  if (rest.length === 0) {
    const doc = apiResourceList(apis, gv);
    return doc ? { doc } : undefined;
  }
  let watch = false;
  if (rest[0] === 'watch') {
    watch = true;
    rest = rest.slice(1);
  }
  if (rest[0] === 'namespaces' && rest.length >= 3 && apis.find(gv, rest[2]!)) {
    const r = apis.find(gv, rest[2]!)!;
    if (!r.namespaced || rest.length > 5) return undefined;
    return { r, ns: rest[1], name: rest[3], sub: rest[4], watch };
  }
  const r = apis.find(gv, rest[0]!);
  if (!r || rest.length > 3) return undefined;
  return { r, name: rest[1], sub: rest[2], watch };
}
