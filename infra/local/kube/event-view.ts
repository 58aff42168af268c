import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Cluster } from './cluster.ts';
import type { Cause } from './errors.ts';
import { errors } from './errors.ts';
import { applyPatch, PATCH_TYPES, PatchError, PatchTooLarge } from './patch.ts';
import type { ListQuery } from './query.ts';
import { resource, type ResourceDef } from './resources.ts';
import { listBody, send } from './respond.ts';
import { tableOf, wantsTable } from './table.ts';
import type { KubeObject } from './types.ts';
import { deleteOptions } from './delete-options.ts';
import { serveWatch } from './watch.ts';

/**
 * events.k8s.io/v1 Events are another view of the core/v1 Events, as in the real API server (one
 * storage, converted per request): an Event recorded through either API shows in `kubectl get
 * events` and `kubectl describe`. Field names differ; this is apis/events/v1's conversion.
 */
const RENAMES: [v1: string, core: string][] = [
  ['regarding', 'involvedObject'],
  ['note', 'message'],
  ['reportingController', 'reportingComponent'],
  ['deprecatedSource', 'source'],
  ['deprecatedFirstTimestamp', 'firstTimestamp'],
  ['deprecatedLastTimestamp', 'lastTimestamp'],
  ['deprecatedCount', 'count'],
];

function rename(obj: Record<string, unknown>, pairs: [string, string][]): Record<string, unknown> {
  const out: Record<string, unknown> = { ...obj };
  for (const [from, to] of pairs) {
    delete out[from];
    if (obj[from] !== undefined) out[to] = obj[from];
  }
  return out;
}

/** A stored core Event as events.k8s.io/v1 serves it. */
export function toEventsV1(core: KubeObject): KubeObject {
  const out = rename(
    core,
    RENAMES.map(([v1, c]) => [c, v1]),
  ) as KubeObject;
  // Events recorded the old way carry only timestamps; typed clients require eventTime here.
  out.eventTime ??= micro(String(core.firstTimestamp ?? core.metadata.creationTimestamp));
  return { ...out, apiVersion: 'events.k8s.io/v1', kind: 'Event' };
}

/** An events.k8s.io/v1 body as the core Event it is stored as. */
export function toCoreEvent(body: unknown): unknown {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return body;
  return { ...rename(body as Record<string, unknown>, RENAMES), apiVersion: 'v1', kind: 'Event' };
}

const micro = (iso: string) => (/\.\d{6}Z$/.test(iso) ? iso : iso.replace(/(\.\d+)?Z$/, '.000000Z'));

/** events.k8s.io field selectors name the v1 fields; the storage indexes the core ones. */
export function coreFieldSelector(selector: string | undefined): string | undefined {
  return selector
    ?.replace(/\bregarding\./g, 'involvedObject.')
    .replace(/\breportingController\b/g, 'reportingComponent')
    .replace(/\bdeprecatedSource\b/g, 'source');
}

/** ValidateEventCreate for events.k8s.io/v1: what a new-style recorder must send. */
export function checkEventsV1Create(r: ResourceDef, body: unknown): void {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return;
  const e = body as Record<string, unknown>;
  const name = String((e.metadata as { name?: unknown } | undefined)?.name ?? '');
  const causes: Cause[] = [];
  const required = (field: string) => causes.push({ reason: 'FieldValueRequired', message: 'Required value', field });
  if (!e.eventTime) required('eventTime');
  for (const f of ['reportingController', 'reportingInstance', 'action', 'reason'])
    if (typeof e[f] !== 'string' || e[f] === '') required(f);
  if (e.type !== 'Normal' && e.type !== 'Warning')
    causes.push({
      reason: 'FieldValueNotSupported',
      message: `Unsupported value: ${JSON.stringify(e.type ?? '')}: supported values: "Normal", "Warning"`,
      field: 'type',
    });
  if (typeof e.note === 'string' && Buffer.byteLength(e.note) > 1024)
    causes.push({ reason: 'FieldValueTooLong', message: 'Too long: may not be more than 1024 bytes', field: 'note' });
  if (causes.length > 0) throw errors.invalidCauses(r, name, causes);
}

export interface ViewRequest {
  r: ResourceDef;
  ns: string | undefined;
  name: string | undefined;
  method: string;
  list: ListQuery | undefined;
  dryRun: boolean;
  body: unknown;
  contentType: string;
  watch: boolean;
}

/** events.k8s.io/v1 Events: every verb on the stored core Events, converted on the way in and out. */
export function serveEventsV1(
  cluster: Cluster,
  req: IncomingMessage,
  res: ServerResponse,
  open: Set<ServerResponse>,
  v: ViewRequest,
): void {
  const core = resource('events');
  const { r, ns, name, method, list, dryRun, body } = v;
  const nsName = ns ?? '';
  const one = (o: KubeObject) => toEventsV1(o);
  if (name === undefined) {
    const selectors = { labelSelector: list?.labelSelector, fieldSelector: coreFieldSelector(list?.fieldSelector) };
    if (method === 'GET' && list) {
      if (v.watch || list.watch)
        return serveWatch(
          req,
          res,
          cluster,
          core,
          ns,
          {
            ...selectors,
            resourceVersion: list.resourceVersion,
            ...(list.timeoutSeconds !== undefined ? { timeoutSeconds: list.timeoutSeconds } : {}),
            view: one,
          },
          open,
        );
      const result = cluster.list(core, ns, { ...selectors, limit: list.limit, continue: list.continue });
      if (wantsTable(req.headers.accept)) return send(res, 200, tableOf(core, result, cluster.clock.now()));
      return send(res, 200, listBody(r, { ...result, items: result.items.map(one) }));
    }
    if (method === 'POST') {
      checkEventsV1Create(r, body);
      return send(res, dryRun ? 200 : 201, one(cluster.create(core, nsName, toCoreEvent(body), { dryRun })));
    }
    if (method === 'DELETE') {
      const result = cluster.list(core, ns, selectors);
      return send(
        res,
        200,
        listBody(r, {
          ...result,
          items: result.items.map((o) =>
            one(cluster.delete(core, o.metadata.namespace ?? '', o.metadata.name, { dryRun })),
          ),
        }),
      );
    }
    throw errors.methodNotAllowed('the server does not allow this method on the requested resource');
  }
  switch (method) {
    case 'GET':
      return send(res, 200, one(cluster.get(core, nsName, name)));
    case 'PUT':
      return send(res, 200, one(cluster.replace(core, nsName, name, toCoreEvent(body), { dryRun })));
    case 'PATCH': {
      // The patch applies to the v1 form, as the real server's conversion does, then is stored whole.
      const type = v.contentType.split(';')[0]!.trim();
      if (type === PATCH_TYPES.apply || !Object.values(PATCH_TYPES).includes(type as never))
        throw errors.unsupportedMediaType(type);
      let next: unknown;
      try {
        next = applyPatch(type, one(cluster.get(core, nsName, name)), body);
      } catch (err) {
        if (err instanceof PatchError) throw errors.invalid(r, name, 'patch', err.message);
        if (err instanceof PatchTooLarge) throw errors.tooLarge(err.message);
        throw err;
      }
      return send(res, 200, one(cluster.replace(core, nsName, name, toCoreEvent(next), { dryRun })));
    }
    case 'DELETE':
      return send(res, 200, one(cluster.delete(core, nsName, name, { dryRun: dryRun || deleteOptions(body).dryRun })));
    default:
      throw errors.methodNotAllowed('the server does not allow this method on the requested resource');
  }
}
