import type { ServerResponse } from 'node:http';
import type { ListResult } from './cluster-list.ts';
import { apiVersionOf, type ResourceDef } from './resources.ts';

/** Writing answers: shared by the router (server.ts) and the events.k8s.io view (event-view.ts). */
export function send(res: ServerResponse, code: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(code, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

/** A `<Kind>List` with the list metadata the real server sends (resourceVersion, continue, remainingItemCount). */
export function listBody(r: ResourceDef, result: ListResult): object {
  return {
    kind: `${r.kind}List`,
    apiVersion: apiVersionOf(r),
    metadata: {
      resourceVersion: result.resourceVersion,
      ...(result.continue ? { continue: result.continue } : {}),
      ...(result.remainingItemCount !== undefined ? { remainingItemCount: result.remainingItemCount } : {}),
    },
    items: result.items,
  };
}
