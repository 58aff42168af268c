import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ListResult } from './cluster-list.ts';
import { AUDIT_KEPT } from './audit.ts';
import type { Cluster } from './cluster.ts';
import { apiVersions } from './discovery.ts';
import { DRA_GROUP, toServedVersion, toStoredVersion } from './api-versions.ts';
import type { KubeObject } from './types.ts';
import { checkAccess, requestUser, selfSubjectAccessReview, verbOf } from './access-review.ts';
import { ApiError, errors } from './errors.ts';
import type { Faults } from './faults.ts';
import { serveEventsV1 } from './event-view.ts';
import { resource, type ResourceDef } from './resources.ts';
import { listBody, send } from './respond.ts';
import { openApiGroupVersion, openApiRoot, openApiV2 } from './openapi.ts';
import { checkKind, decode, readBody, reviewBody } from './request-body.ts';
import { route } from './routes.ts';
import { tableOf, wantsTable } from './table.ts';
import { serveWatch } from './watch.ts';
import { deleteOptions } from './delete-options.ts';
import { listQuery, queryInt, writeOptions } from './query.ts';

/**
 * HTTP routing for the Kubernetes REST paths:
 *   /api/v1/{plural}[/{name}[/{sub}]]                       cluster-scoped, or all namespaces
 *   /api/v1/namespaces/{ns}/{plural}[/{name}[/{sub}]]       namespaced
 *   /apis/{group}/{version}/...                             the same under a group
 *   /api/v1/watch/...                                       legacy watch paths
 * plus discovery and /version. Every failure is a Status object with the real code and reason. Paths are
 * read in routes.ts, bodies in request-body.ts.
 */

/**
 * `Accept: application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1`: what real API
 * servers answer for a metadata-only list (kubectl get --show-kind -o name, controller-runtime's
 * metadata client): each item keeps only its metadata.
 */
export function wantsMetadata(accept: string | undefined): boolean {
  return accept !== undefined && /as=PartialObjectMetadataList/.test(accept);
}

function metadataListBody(r: ResourceDef, result: ListResult): object {
  const body = listBody(r, result) as { items: unknown };
  return {
    ...body,
    kind: 'PartialObjectMetadataList',
    apiVersion: 'meta.k8s.io/v1',
    items: result.items.map((o) => ({
      kind: 'PartialObjectMetadata',
      apiVersion: 'meta.k8s.io/v1',
      metadata: o.metadata,
    })),
  };
}

export function createHandler(cluster: Cluster, open: Set<ServerResponse>, faults?: Faults) {
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    try {
      const fault = faults?.take(req.method ?? 'GET', new URL(req.url ?? '/', 'http://localhost').pathname);
      if (fault) {
        req.resume();
        throw fault;
      }
      await handle(cluster, req, res, open);
    } catch (err) {
      if (res.headersSent) {
        res.end();
        return;
      }
      if (err instanceof ApiError) send(res, err.code, err.status);
      else send(res, 500, errors.internal(err instanceof Error ? err.message : String(err)).status);
    }
  };
}

async function handle(
  cluster: Cluster,
  req: IncomingMessage,
  res: ServerResponse,
  open: Set<ServerResponse>,
): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://localhost');
  const q = url.searchParams;
  const segs = url.pathname
    .split('/')
    .filter((s) => s !== '')
    .map(decodeURIComponent);
  const method = req.method ?? 'GET';
  // Wall-clock mode: whatever came due since the last request (grace periods) happens first.
  cluster.tick();
  // kubectl --as: the request is that user's, and RBAC decides it (access-review.ts).
  const { user, impersonated } = requestUser(req);
  const resourceRequest = (segs[0] === 'api' && segs.length > 2) || (segs[0] === 'apis' && segs.length > 3);
  if (impersonated && !resourceRequest)
    checkAccess(cluster.store, user, { verb: method.toLowerCase(), path: url.pathname });

  if (segs[0] === 'version' && segs.length === 1) return send(res, 200, cluster.apis.versionInfo());
  if (['healthz', 'livez', 'readyz'].includes(segs[0] ?? '')) {
    res.writeHead(200, { 'Content-Type': 'text/plain' });
    return void res.end('ok');
  }
  if (segs[0] === 'openapi' && segs[1] === 'v3') {
    const doc =
      segs.length === 2 ? openApiRoot(cluster.apis) : openApiGroupVersion(cluster.apis, segs.slice(2).join('/'));
    return doc ? send(res, 200, doc) : send(res, 404, errors.notFoundPath().status);
  }
  if (segs[0] === 'openapi' && segs[1] === 'v2' && segs.length === 2) return send(res, 200, openApiV2(cluster.apis));
  if (segs[0] === 'api' && segs.length === 1) return send(res, 200, apiVersions(req.headers.host ?? '127.0.0.1'));
  // POST /api/v1/namespaces/{ns}/bindings: the collection form of binding (client-node's createNamespacedBinding).
  if (
    method === 'POST' &&
    segs.length === 5 &&
    segs[0] === 'api' &&
    segs[2] === 'namespaces' &&
    segs[4] === 'bindings'
  ) {
    const body = decode(await readBody(req), req.headers['content-type'] ?? 'application/json') as
      { metadata?: { name?: string } } | undefined;
    return send(res, 201, cluster.bind(segs[3]!, body?.metadata?.name ?? '', body));
  }
  const hit = route(cluster.apis, segs);
  if (!hit) return send(res, 404, errors.notFoundPath().status);
  if ('doc' in hit) return send(res, 200, hit.doc);

  const { name, sub } = hit;
  // A DRA kind asked for at another version than it is stored (v1): converted at the edge, both ways.
  const served = hit.r;
  const r = served.group === DRA_GROUP ? resource(served.plural) : served;
  const view = (o: KubeObject): KubeObject => (o.kind === served.kind ? (toServedVersion(served, o) as KubeObject) : o);
  const ns = r.namespaced ? hit.ns : undefined;
  const watch = hit.watch || (q.has('watch') && !['0', 'false'].includes(q.get('watch')!.toLowerCase()));
  const verb = verbOf(method, name !== undefined, watch);
  if (impersonated) {
    checkAccess(
      cluster.store,
      user,
      {
        verb,
        group: served.group,
        resource: served.plural,
        ...(sub ? { subresource: sub } : {}),
        ...(name ? { name } : {}),
        ...(ns ? { namespace: ns } : {}),
      },
      served,
    );
  }
  if (['get', 'list', 'watch'].includes(verb)) {
    if (impersonated) cluster.reads.add(`${user.name} ${verb} ${served.plural}${sub ? `/${sub}` : ''} ${ns ?? ''}`);
  } else {
    cluster.audit.push({
      user: user.name,
      verb,
      resource: served.plural,
      ...(sub ? { subresource: sub } : {}),
      ...(ns ? { namespace: ns } : {}),
      ...(name ? { name } : {}),
    });
    // Trimmed in halves, not per request: the last AUDIT_KEPT to 2×AUDIT_KEPT are kept.
    if (cluster.audit.length > 2 * AUDIT_KEPT) cluster.audit.splice(0, AUDIT_KEPT);
  }
  if (served.plural === 'selfsubjectaccessreviews') {
    if (method !== 'POST' || name !== undefined)
      throw errors.methodNotAllowed('the server does not allow this method on the requested resource');
    return send(res, 201, selfSubjectAccessReview(cluster.store, user, await reviewBody(req)));
  }
  const optionsKind = (
    { POST: 'CreateOptions', PUT: 'UpdateOptions', PATCH: 'PatchOptions', DELETE: 'DeleteOptions' } as const
  )[method as 'POST'];
  // Options are checked before the body is read or anything runs, as the real handlers decode them first.
  const list = method === 'GET' || (method === 'DELETE' && name === undefined) ? listQuery(q) : undefined;
  const dryRun = optionsKind ? writeOptions(q, optionsKind) : false;
  const contentType = req.headers['content-type'] ?? 'application/json';
  const decoded = method === 'GET' ? undefined : decode(await readBody(req), contentType);
  if ((method === 'POST' && name === undefined) || method === 'PUT') checkKind(served, decoded);
  const body = toStoredVersion(served, decoded);
  const gone = () => {
    throw errors.methodNotAllowed(`the server does not allow this method on the requested resource`);
  };
  if (sub !== undefined && !(r.subresources ?? []).includes(sub)) return send(res, 404, errors.notFoundPath().status);
  if (r.viewOf !== undefined)
    return serveEventsV1(cluster, req, res, open, {
      r,
      ns,
      name,
      method,
      list,
      dryRun,
      body,
      contentType,
      watch: hit.watch,
    });

  if (name === undefined) {
    if (method === 'GET' && list) {
      const opts = { labelSelector: list.labelSelector, fieldSelector: list.fieldSelector };
      if (hit.watch || list.watch) {
        return serveWatch(
          req,
          res,
          cluster,
          r,
          ns,
          {
            ...opts,
            resourceVersion: list.resourceVersion,
            ...(list.timeoutSeconds !== undefined ? { timeoutSeconds: list.timeoutSeconds } : {}),
            view,
          },
          open,
        );
      }
      const result = cluster.list(r, ns, { ...opts, limit: list.limit, continue: list.continue });
      if (wantsTable(req.headers.accept)) return send(res, 200, tableOf(r, result, cluster.clock.now()));
      if (wantsMetadata(req.headers.accept)) return send(res, 200, metadataListBody(r, result));
      return send(res, 200, listBody(served, { ...result, items: result.items.map(view) }));
    }
    if (method === 'POST') return send(res, dryRun ? 200 : 201, view(cluster.create(r, ns ?? '', body, { dryRun })));
    if (method === 'DELETE') {
      const result = cluster.list(r, ns, { labelSelector: list?.labelSelector, fieldSelector: list?.fieldSelector });
      const items = result.items.map((o) => cluster.delete(r, o.metadata.namespace ?? '', o.metadata.name, { dryRun }));
      return send(res, 200, listBody(served, { ...result, items: items.map((o) => view(o as KubeObject)) }));
    }
    return gone();
  }

  const nsName = ns ?? '';
  if (sub === 'eviction' || sub === 'binding') {
    if (method !== 'POST') return gone();
    return send(
      res,
      201,
      sub === 'eviction' ? cluster.evict(nsName, name, body, { dryRun }) : cluster.bind(nsName, name, body),
    );
  }
  switch (method) {
    case 'GET': {
      const obj = cluster.get(r, nsName, name);
      if (wantsTable(req.headers.accept))
        return send(
          res,
          200,
          tableOf(r, { items: [obj], resourceVersion: obj.metadata.resourceVersion }, cluster.clock.now()),
        );
      return send(res, 200, view(obj));
    }
    case 'PUT':
      return send(
        res,
        200,
        view(cluster.replace(r, nsName, name, body, { dryRun, ...(sub ? { subresource: sub } : {}) })),
      );
    case 'PATCH': {
      const existed =
        cluster.store.get(`${r.group === '' ? r.plural : `${r.plural}.${r.group}`}`, nsName, name) !== undefined;
      const out = cluster.patch(r, nsName, name, contentType, body, {
        dryRun,
        ...(sub ? { subresource: sub } : {}),
        fieldManager: q.get('fieldManager') ?? undefined,
      });
      return send(res, existed ? 200 : 201, view(out));
    }
    case 'DELETE': {
      const opts = deleteOptions(body);
      const grace = queryInt(q, 'gracePeriodSeconds');
      const out = cluster.delete(r, nsName, name, {
        ...opts,
        ...(grace !== undefined ? { gracePeriodSeconds: grace } : {}),
        dryRun: dryRun || opts.dryRun,
      });
      return send(res, 200, view(out as KubeObject));
    }
    default:
      return gone();
  }
}
