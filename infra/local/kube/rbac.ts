import type { Store } from './store.ts';
import type { KubeObject } from './types.ts';

/**
 * RBAC as kube-apiserver evaluates it, over the Roles, ClusterRoles and their bindings in the store:
 * https://kubernetes.io/docs/reference/access-authn-authz/rbac/ and the upstream code it is written
 * again from — plugin/pkg/auth/authorizer/rbac/rbac.go (allowed when any rule a binding grants the user
 * allows the request; RBAC never denies, it only has no opinion), pkg/registry/rbac/validation/rule.go
 * (ClusterRoleBindings apply everywhere, RoleBindings only in their namespace; who a subject is), and
 * pkg/apis/rbac/v1/evaluation_helpers.go (how a rule's verbs, groups, resources, names and URLs match).
 * Aggregated ClusterRoles (`aggregationRule`) count with the rules the aggregation controller wrote
 * into them (clusterrole-aggregation.ts), as the real authorizer reads them.
 */
export interface UserInfo {
  name: string;
  groups: string[];
}

/** What one request asks to do: a resource request, or a path outside the API (`/version`, `/apis`). */
export type Attributes =
  | {
      verb: string;
      group: string;
      resource: string;
      subresource?: string;
      name?: string;
      /** '' or absent: cluster-scoped, or all namespaces. */
      namespace?: string;
    }
  | { verb: string; path: string };

export interface Decision {
  allowed: boolean;
  /** `RBAC: allowed by ClusterRoleBinding "x" of ClusterRole "y" to Group "z"`, as the real authorizer says. */
  reason: string;
}

interface Rule {
  verbs?: string[];
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
}
interface Subject {
  kind: string;
  name: string;
  namespace?: string;
}
interface Binding extends KubeObject {
  subjects?: Subject[];
  roleRef?: { kind?: string; name?: string };
}

/** k8s.io/apiserver pkg/authentication/user: every authenticated user is in this group. */
export const AUTHENTICATED = 'system:authenticated';
/** The privileged group: kube-apiserver allows it everything before RBAC is asked (authorizerfactory). */
export const MASTERS = 'system:masters';

/**
 * The bootstrap roles every cluster has (plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go),
 * held here instead of stored so a fleet's object counts are unchanged: discovery and the self-reviews
 * for every authenticated user.
 */
const BOOTSTRAP: { binding: string; role: string; group: string; rules: Rule[] }[] = [
  {
    binding: 'system:discovery',
    role: 'system:discovery',
    group: AUTHENTICATED,
    rules: [
      {
        verbs: ['get'],
        nonResourceURLs: ['/api', '/api/*', '/apis', '/apis/*', '/healthz', '/livez', '/openapi', '/openapi/*'],
      },
      { verbs: ['get'], nonResourceURLs: ['/readyz', '/version', '/version/'] },
    ],
  },
  {
    binding: 'system:basic-user',
    role: 'system:basic-user',
    group: AUTHENTICATED,
    rules: [
      {
        verbs: ['create'],
        apiGroups: ['authorization.k8s.io'],
        resources: ['selfsubjectaccessreviews', 'selfsubjectrulesreviews'],
      },
      { verbs: ['create'], apiGroups: ['authentication.k8s.io'], resources: ['selfsubjectreviews'] },
    ],
  },
];

const has = (list: string[] | undefined, value: string) => (list ?? []).some((v) => v === '*' || v === value);

/** evaluation_helpers.go ResourceMatches: `*`, the combined `resource/subresource`, or `*\/subresource`. */
function resourceMatches(rule: Rule, resource: string, subresource: string | undefined): boolean {
  const combined = subresource ? `${resource}/${subresource}` : resource;
  return (rule.resources ?? []).some(
    (r) => r === '*' || r === combined || (subresource !== undefined && r === `*/${subresource}`),
  );
}

/** evaluation_helpers.go NonResourceURLMatches: exact, `*`, or a prefix ending in `*`. */
function urlMatches(rule: Rule, path: string): boolean {
  return (rule.nonResourceURLs ?? []).some(
    (u) => u === '*' || u === path || (u.endsWith('*') && path.startsWith(u.slice(0, -1))),
  );
}

/** rbac.go RuleAllows. */
function ruleAllows(a: Attributes, rule: Rule): boolean {
  if (!has(rule.verbs, a.verb)) return false;
  if ('path' in a) return urlMatches(rule, a.path);
  if (!has(rule.apiGroups, a.group) || !resourceMatches(rule, a.resource, a.subresource)) return false;
  const names = rule.resourceNames ?? [];
  return names.length === 0 || (a.name !== undefined && names.includes(a.name));
}

/** rule.go appliesToUser; a ServiceAccount subject is the user `system:serviceaccount:<ns>:<name>`. */
function subjectFor(user: UserInfo, subjects: Subject[] | undefined, bindingNs: string): Subject | undefined {
  return (subjects ?? []).find((s) => {
    if (s.kind === 'User') return s.name === user.name;
    if (s.kind === 'Group') return user.groups.includes(s.name);
    if (s.kind === 'ServiceAccount') return user.name === `system:serviceaccount:${s.namespace ?? bindingNs}:${s.name}`;
    return false;
  });
}

function describeSubject(s: Subject, bindingNs: string): string {
  if (s.kind === 'ServiceAccount') return `${s.kind} "${s.name}/${s.namespace ?? bindingNs}"`;
  return `${s.kind} "${s.name}"`;
}

function rulesOf(store: Store, roleRef: Binding['roleRef'], ns: string): Rule[] {
  if (!roleRef?.name) return [];
  const role =
    roleRef.kind === 'ClusterRole'
      ? store.get('clusterroles.rbac.authorization.k8s.io', '', roleRef.name)
      : store.get('roles.rbac.authorization.k8s.io', ns, roleRef.name);
  return ((role as { rules?: Rule[] } | undefined)?.rules ?? []).filter((r) => typeof r === 'object' && r !== null);
}

/** The store lists in no order; the real informer cache has none either, so any fixed one will do. */
const byName = (bs: Binding[]) => [...bs].sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1));

export function authorize(store: Store, user: UserInfo, a: Attributes): Decision {
  if (user.groups.includes(MASTERS)) return { allowed: true, reason: '' };
  for (const b of BOOTSTRAP)
    if (user.groups.includes(b.group) && b.rules.some((r) => ruleAllows(a, r)))
      return {
        allowed: true,
        reason: `RBAC: allowed by ClusterRoleBinding "${b.binding}" of ClusterRole "${b.role}" to Group "${b.group}"`,
      };
  // ClusterRoleBindings first, then the RoleBindings of the request's namespace (rule.go VisitRulesFor).
  for (const b of byName(store.list('clusterrolebindings.rbac.authorization.k8s.io') as Binding[])) {
    const s = subjectFor(user, b.subjects, '');
    if (!s || b.roleRef?.kind !== 'ClusterRole') continue;
    if (rulesOf(store, b.roleRef, '').some((r) => ruleAllows(a, r)))
      return {
        allowed: true,
        reason:
          `RBAC: allowed by ClusterRoleBinding "${b.metadata.name}" of ClusterRole "${b.roleRef.name}" ` +
          `to ${describeSubject(s, '')}`,
      };
  }
  const ns = 'path' in a ? '' : (a.namespace ?? '');
  if (ns === '') return { allowed: false, reason: '' };
  for (const b of byName(store.list('rolebindings.rbac.authorization.k8s.io', ns) as Binding[])) {
    const s = subjectFor(user, b.subjects, ns);
    if (!s) continue;
    if (rulesOf(store, b.roleRef, ns).some((r) => ruleAllows(a, r)))
      return {
        allowed: true,
        reason:
          `RBAC: allowed by RoleBinding "${b.metadata.name}/${ns}" of ${b.roleRef?.kind} "${b.roleRef?.name}" ` +
          `to ${describeSubject(s, ns)}`,
      };
  }
  return { allowed: false, reason: '' };
}
