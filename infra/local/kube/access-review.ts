import type { IncomingMessage } from 'node:http';
import { failure, type ApiError } from './errors.ts';
import { AUTHENTICATED, authorize, MASTERS, type Attributes, type UserInfo } from './rbac.ts';
import { qualifiedName, type ResourceDef } from './resources.ts';
import type { Store } from './store.ts';

/**
 * Who a request is, and whether RBAC lets them: the simulated cluster's one token is a cluster admin
 * (`system:masters`), and kubectl's `--as` / `--as-group` (the Impersonate-User / Impersonate-Group
 * headers) make a request someone else's, authorized by RBAC from then on, as a real server does
 * after it has checked the admin may impersonate. `SelfSubjectAccessReview` (`kubectl auth can-i`)
 * asks the same question without doing anything.
 */
export const ADMIN: UserInfo = { name: 'kubernetes-admin', groups: [MASTERS, AUTHENTICATED] };

/**
 * k8s.io/apiserver pkg/endpoints/filters/impersonation.go: a ServiceAccount impersonated without groups
 * gets `system:serviceaccounts` and `system:serviceaccounts:<ns>`; every impersonated user is in
 * `system:authenticated`.
 */
export function requestUser(req: IncomingMessage): { user: UserInfo; impersonated: boolean } {
  const name = req.headersDistinct['impersonate-user']?.[0];
  if (name === undefined || name === '') return { user: ADMIN, impersonated: false };
  const groups = [...(req.headersDistinct['impersonate-group'] ?? [])];
  const sa = /^system:serviceaccount:([^:]+):([^:]+)$/.exec(name);
  if (sa && groups.length === 0) groups.push('system:serviceaccounts', `system:serviceaccounts:${sa[1]}`);
  if (!groups.includes(AUTHENTICATED)) groups.push(AUTHENTICATED);
  return { user: { name, groups }, impersonated: true };
}

/**
 * The 403 the real server sends (responsewriters/errors.go forbiddenMessage, wrapped by NewForbidden):
 * `nodes "n1" is forbidden: User "u" cannot patch resource "nodes" in API group "" at the cluster scope`.
 */
export function forbidden(user: UserInfo, a: Attributes, r?: ResourceDef): ApiError {
  if ('path' in a)
    return failure(403, 'Forbidden', `forbidden: User "${user.name}" cannot ${a.verb} path "${a.path}"`, {});
  const resource = a.subresource ? `${a.resource}/${a.subresource}` : a.resource;
  const where = a.namespace ? `in the namespace "${a.namespace}"` : 'at the cluster scope';
  const what = `User "${user.name}" cannot ${a.verb} resource "${resource}" in API group "${a.group}" ${where}`;
  const gr = r ? qualifiedName(r) : a.group === '' ? a.resource : `${a.resource}.${a.group}`;
  return failure(403, 'Forbidden', `${gr}${a.name ? ` "${a.name}"` : ''} is forbidden: ${what}`, {
    ...(a.name ? { name: a.name } : {}),
    ...(a.group ? { group: a.group } : {}),
    kind: a.resource,
  });
}

/** The RBAC verb of a request (k8s.io/apiserver pkg/endpoints/request/requestinfo.go). */
export function verbOf(method: string, named: boolean, watch: boolean): string {
  if (watch) return 'watch';
  if (method === 'GET' || method === 'HEAD') return named ? 'get' : 'list';
  if (method === 'POST') return 'create';
  if (method === 'PUT') return 'update';
  if (method === 'PATCH') return 'patch';
  if (method === 'DELETE') return named ? 'delete' : 'deletecollection';
  return method.toLowerCase();
}

interface ReviewSpec {
  resourceAttributes?: {
    namespace?: string;
    verb?: string;
    group?: string;
    resource?: string;
    subresource?: string;
    name?: string;
  };
  nonResourceAttributes?: { path?: string; verb?: string };
}

/**
 * `POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews`: whether the requester may do what the
 * spec names, decided by the same RBAC as every request (pkg/registry/authorization/selfsubjectaccessreview).
 * Exactly one of resourceAttributes and nonResourceAttributes (validation.ValidateSelfSubjectAccessReviewSpec).
 */
export function selfSubjectAccessReview(store: Store, user: UserInfo, body: unknown): object {
  const spec = ((body as { spec?: unknown } | undefined)?.spec ?? {}) as ReviewSpec;
  const r = spec.resourceAttributes;
  const n = spec.nonResourceAttributes;
  if ((r === undefined) === (n === undefined))
    throw failure(
      422,
      'Invalid',
      'SelfSubjectAccessReview.authorization.k8s.io "" is invalid: spec.resourceAttributes: Invalid value: ' +
        '"null": exactly one of nonResourceAttributes or resourceAttributes must be specified',
      { group: 'authorization.k8s.io', kind: 'SelfSubjectAccessReview' },
    );
  const attrs: Attributes = r
    ? {
        verb: r.verb ?? '',
        group: r.group ?? '',
        resource: r.resource ?? '',
        ...(r.subresource ? { subresource: r.subresource } : {}),
        ...(r.name ? { name: r.name } : {}),
        ...(r.namespace ? { namespace: r.namespace } : {}),
      }
    : { verb: n!.verb ?? '', path: n!.path ?? '' };
  const decision = authorize(store, user, attrs);
  return {
    kind: 'SelfSubjectAccessReview',
    apiVersion: 'authorization.k8s.io/v1',
    metadata: { creationTimestamp: null },
    spec,
    status: { allowed: decision.allowed, ...(decision.reason ? { reason: decision.reason } : {}) },
  };
}

/** Refuses an impersonated request RBAC does not allow; the admin's own requests pass (system:masters). */
export function checkAccess(store: Store, user: UserInfo, a: Attributes, r?: ResourceDef): void {
  if (!authorize(store, user, a).allowed) throw forbidden(user, a, r);
}
