import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Cluster } from './cluster.ts';
import { errors } from './errors.ts';
import { qualifiedName, type ResourceDef } from './resources.ts';
import { matchesFields, matchesRequirements, parseFieldSelector, parseLabelSelector } from './selectors.ts';
import type { StoreEvent } from './store.ts';
import { tableOf, wantsTable } from './table.ts';
import type { KubeObject } from './types.ts';

/**
 * `?watch=1`: a chunked stream of JSON lines `{"type":"ADDED|MODIFIED|DELETED","object":{...}}`.
 * Without a resourceVersion (or "0") it starts with ADDED for every current object, like the
 * real watch cache; with one it replays history after it, or sends a 410 ERROR event when that
 * history is gone. Objects entering or leaving the selector arrive as ADDED / DELETED.
 */
export interface WatchOptions {
  labelSelector?: string;
  fieldSelector?: string;
  resourceVersion?: string;
  timeoutSeconds?: number;
  /** Converts each object before it is sent (events.k8s.io's view of core Events). */
  view?: (o: KubeObject) => KubeObject;
}

export function serveWatch(
  req: IncomingMessage,
  res: ServerResponse,
  cluster: Cluster,
  r: ResourceDef,
  ns: string | undefined,
  opts: WatchOptions,
  open: Set<ServerResponse>,
): void {
  // `kubectl get -w` asks for Tables: each event then carries a one-row Table.
  const asTable = wantsTable(req.headers.accept);
  let labels, fields;
  try {
    labels = opts.labelSelector ? parseLabelSelector(opts.labelSelector) : [];
    fields = opts.fieldSelector ? parseFieldSelector(opts.fieldSelector) : [];
  } catch (err) {
    throw errors.badRequest((err as Error).message);
  }
  const resource = qualifiedName(r);
  const matches = (o: KubeObject | undefined) =>
    o !== undefined &&
    (ns === undefined || o.metadata.namespace === ns) &&
    matchesRequirements(o.metadata.labels, labels) &&
    matchesFields(o, fields);
  res.writeHead(200, {
    'Content-Type': 'application/json',
    'Transfer-Encoding': 'chunked',
    'Cache-Control': 'no-cache, private',
  });
  res.flushHeaders();
  const view = opts.view ?? ((o: KubeObject) => o);
  const send = (type: string, raw: KubeObject | object) => {
    const object = type === 'ERROR' || asTable ? raw : view(raw as KubeObject);
    const body =
      asTable && type !== 'ERROR'
        ? tableOf(
            r,
            { items: [object as KubeObject], resourceVersion: (object as KubeObject).metadata.resourceVersion },
            cluster.clock.now(),
          )
        : object;
    res.write(JSON.stringify({ type, object: body }) + '\n');
  };
  const forward = (e: StoreEvent) => {
    if (e.resource !== resource) return;
    const now = matches(e.object);
    const before = e.type === 'MODIFIED' ? matches(e.previous) : now;
    if (e.type === 'MODIFIED' && now !== before) send(now ? 'ADDED' : 'DELETED', cluster.present(r, e.object));
    else if (now) send(e.type, cluster.present(r, e.object));
  };

  const rv = opts.resourceVersion;
  if (rv === undefined || rv === '' || rv === '0') {
    for (const o of cluster.list(r, ns, { labelSelector: opts.labelSelector, fieldSelector: opts.fieldSelector }).items)
      send('ADDED', o);
  } else {
    const history = cluster.store.eventsSince(Number(rv));
    if (history === undefined || Number.isNaN(Number(rv))) {
      send('ERROR', errors.gone(`too old resource version: ${rv} (${cluster.store.resourceVersion})`).status);
      res.end();
      return;
    }
    for (const e of history) forward(e);
  }
  const unsubscribe = cluster.store.subscribe(forward);
  open.add(res);
  const finish = () => {
    unsubscribe();
    open.delete(res);
    clearTimeout(timer);
    if (!res.writableEnded) res.end();
  };
  // The server-side timeout is wall time by nature (it bounds an open HTTP stream, not simulated work).
  // Zero or less means the default; setTimeout cannot wait past 2^31 - 1 ms.
  const seconds = opts.timeoutSeconds !== undefined && opts.timeoutSeconds > 0 ? opts.timeoutSeconds : 1800;
  const timer = setTimeout(finish, Math.min(seconds * 1000, 2 ** 31 - 1));
  timer.unref();
  req.on('close', finish);
  res.on('close', finish);
}
