/**
 * The Kubernetes permissions the adapters need, as data. Each adapter method names its verbs in a
 * `// RBAC: [group] resource verbs` comment; rbac.test.ts checks that those comments and this
 * list agree, and infra/k8s's ClusterRole is checked against this list with `missingRbac`.
 */
export interface RbacRule {
  /** '' is the core group. */
  apiGroups: string[];
  resources: string[];
  verbs: string[];
}

export const KUBE_RBAC_RULES: readonly RbacRule[] = [
  { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'list', 'patch'] },
  { apiGroups: [''], resources: ['nodes/status'], verbs: ['patch'] },
  { apiGroups: [''], resources: ['pods'], verbs: ['list'] },
  { apiGroups: [''], resources: ['pods/eviction'], verbs: ['create'] },
  { apiGroups: [''], resources: ['resourcequotas'], verbs: ['get', 'list', 'create', 'update', 'delete'] },
  { apiGroups: [''], resources: ['limitranges'], verbs: ['get', 'list', 'create', 'update'] },
  { apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'create', 'update'] },
  { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update', 'delete'] },
  { apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['create'] },
  { apiGroups: ['resource.k8s.io'], resources: ['resourceslices'], verbs: ['list'] },
  { apiGroups: ['resource.k8s.io'], resources: ['devicetaintrules'], verbs: ['list', 'create', 'delete'] },
  { apiGroups: ['nvidia.com'], resources: ['clusterpolicies'], verbs: ['list'] },
  { apiGroups: ['scheduling.volcano.sh'], resources: ['podgroups'], verbs: ['list'] },
  { apiGroups: ['kueue.x-k8s.io'], resources: ['workloads'], verbs: ['list'] },
];

/** `group/resource verb` strings, one per permission (`/nodes get` for the core group). */
export function flattenRbac(rules: readonly RbacRule[]): string[] {
  const out = new Set<string>();
  for (const r of rules) {
    for (const g of r.apiGroups) for (const res of r.resources) for (const v of r.verbs) out.add(`${g}/${res} ${v}`);
  }
  return [...out].sort();
}

/**
 * Permissions in `required` that `granted` (e.g. the rules of infra/k8s's ClusterRole) lacks.
 * `*` in a granted group, resource or verb list matches anything, as in Kubernetes.
 */
export function missingRbac(required: readonly RbacRule[], granted: readonly RbacRule[]): string[] {
  const has = (list: string[], x: string): boolean => list.includes('*') || list.includes(x);
  return flattenRbac(required).filter((perm) => {
    const [gr = '', verb = ''] = perm.split(' ');
    const slash = gr.indexOf('/');
    const group = gr.slice(0, slash);
    const resource = gr.slice(slash + 1);
    return !granted.some((g) => has(g.apiGroups, group) && has(g.resources, resource) && has(g.verbs, verb));
  });
}
