import type { ResourceDef } from './resources.ts';
import { qualifiedName } from './resources.ts';

/**
 * An API error carries the exact Status object the real API server would send, so clients that
 * branch on `reason` / `code` (client-node's ApiException, kubectl's retry loops) behave the same.
 */
export interface StatusBody {
  kind: 'Status';
  apiVersion: 'v1';
  metadata: Record<string, never>;
  status: 'Failure' | 'Success';
  message?: string;
  reason?: string;
  details?: { name?: string; group?: string; kind?: string; causes?: Cause[] };
  code: number;
}

/** One entry of `details.causes`: what is wrong and where (`metadata.labels`, `spec.taints[0].key`). */
export interface Cause {
  reason?: string;
  message: string;
  field?: string;
}

export class ApiError extends Error {
  override name = 'ApiError';
  constructor(readonly status: StatusBody) {
    super(status.message);
  }
  get code(): number {
    return this.status.code;
  }
}

export function failure(code: number, reason: string, message: string, details?: StatusBody['details']): ApiError {
  return new ApiError({
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason,
    ...(details ? { details } : {}),
    code,
  });
}

function detailsOf(r: ResourceDef, name: string): StatusBody['details'] {
  return r.group === '' ? { name, kind: r.plural } : { name, group: r.group, kind: r.plural };
}

export function success(code = 200, details?: StatusBody['details']): StatusBody {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', ...(details ? { details } : {}), code };
}

export const errors = {
  notFound: (r: ResourceDef, name: string) =>
    failure(404, 'NotFound', `${qualifiedName(r)} "${name}" not found`, detailsOf(r, name)),
  alreadyExists: (r: ResourceDef, name: string) =>
    failure(409, 'AlreadyExists', `${qualifiedName(r)} "${name}" already exists`, detailsOf(r, name)),
  conflict: (r: ResourceDef, name: string) =>
    failure(
      409,
      'Conflict',
      `Operation cannot be fulfilled on ${qualifiedName(r)} "${name}": the object has been modified; please apply ` +
        `your changes to the latest version and try again`,
      detailsOf(r, name),
    ),
  conflictMessage: (r: ResourceDef, name: string, message: string) =>
    failure(409, 'Conflict', message, detailsOf(r, name)),
  forbidden: (r: ResourceDef, name: string, why: string) =>
    failure(403, 'Forbidden', `${qualifiedName(r)} "${name}" is forbidden: ${why}`, detailsOf(r, name)),
  invalid: (r: ResourceDef, name: string, field: string, why: string) =>
    failure(422, 'Invalid', `${r.kind} "${name}" is invalid: ${field}: ${why}`, {
      ...detailsOf(r, name),
      kind: r.kind,
      causes: [{ reason: 'FieldValueInvalid', message: why, field }],
    }),
  /** 422 with every cause; the message lists them as the real server does (`[a: ..., b: ...]` for several). */
  invalidCauses: (r: ResourceDef, name: string, causes: Cause[]) => {
    const each = causes.map((c) => `${c.field}: ${c.message}`);
    return failure(
      422,
      'Invalid',
      `${r.kind} "${name}" is invalid: ${each.length === 1 ? each[0] : `[${each.join(', ')}]`}`,
      { ...detailsOf(r, name), kind: r.kind, causes },
    );
  },
  badRequest: (message: string) => failure(400, 'BadRequest', message),
  tooLarge: (message: string) => failure(413, 'RequestEntityTooLarge', message),
  /** Bad query options (PatchOptions, ListOptions): 422 naming the option, as the real server. */
  invalidOptions: (why: string) =>
    failure(422, 'Invalid', `PatchOptions.meta.k8s.io "" is invalid: ${why}`, {
      group: 'meta.k8s.io',
      kind: 'PatchOptions',
      causes: [{ reason: 'FieldValueRequired', message: why, field: why.split(':')[0] ?? '' }],
    }),
  methodNotAllowed: (message: string) => failure(405, 'MethodNotAllowed', message),
  unsupportedMediaType: (type: string) =>
    failure(
      415,
      'UnsupportedMediaType',
      `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, ` +
        `application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json ` +
        `(got ${type})`,
    ),
  // k8s.io/apiserver pkg/util/notfoundhandler: a path no handler serves (a group/version or resource the
  // release does not serve) is this Status with empty details.
  notFoundPath: () => failure(404, 'NotFound', 'the server could not find the requested resource', {}),
  gone: (message: string) => failure(410, 'Expired', message),
  tooManyRequests: (message: string, causes: { reason: string; message: string }[]) =>
    failure(429, 'TooManyRequests', message, { causes }),
  internal: (message: string) => failure(500, 'InternalError', message),
};
