/**
 * Counts the Kubernetes API requests the simulated cluster receives, by verb and resource
 * (`get nodes`, `list pods`, `create pods/eviction`, `update leases`), as an API server's audit log
 * would: a second `request` listener on the sim's HTTP server that only looks at method and path.
 */
import type { IncomingMessage, Server } from 'node:http';

/** `VERB resource[/subresource]` of one request, in RBAC's words; undefined for discovery and health. */
export function requestKind(method: string, url: string): string | undefined {
  const u = new URL(url, 'http://sim');
  let segs = u.pathname.split('/').filter((s) => s !== '');
  if (segs[0] === 'api') segs = segs.slice(2);
  else if (segs[0] === 'apis') segs = segs.slice(3);
  else return undefined;
  const watch = segs[0] === 'watch' || u.searchParams.get('watch') === 'true' || u.searchParams.get('watch') === '1';
  if (segs[0] === 'watch') segs = segs.slice(1);
  // namespaces/{ns}/{plural}/... is namespaced; namespaces[/{name}] is the namespaces resource itself.
  if (segs[0] === 'namespaces' && segs.length >= 3) segs = segs.slice(2);
  const [plural, name, sub] = segs;
  if (!plural) return undefined;
  const resource = sub ? `${plural}/${sub}` : plural;
  const verb =
    method === 'GET'
      ? name
        ? 'get'
        : watch
          ? 'watch'
          : 'list'
      : method === 'POST'
        ? 'create'
        : method === 'PUT'
          ? 'update'
          : method === 'PATCH'
            ? 'patch'
            : method === 'DELETE'
              ? name
                ? 'delete'
                : 'deletecollection'
              : method.toLowerCase();
  return `${verb} ${resource}`;
}

export interface RequestCounter {
  /** Requests by kind since start (or the last reset). */
  readonly counts: Map<string, number>;
  total(): number;
  reset(): void;
  stop(): void;
}

export function countRequests(server: Server): RequestCounter {
  const counts = new Map<string, number>();
  const listener = (req: IncomingMessage) => {
    const kind = requestKind(req.method ?? 'GET', req.url ?? '/');
    if (kind) counts.set(kind, (counts.get(kind) ?? 0) + 1);
  };
  server.on('request', listener);
  return {
    counts,
    total: () => [...counts.values()].reduce((a, b) => a + b, 0),
    reset: () => counts.clear(),
    stop: () => void server.off('request', listener),
  };
}
