import { isDeepStrictEqual } from 'node:util';
import { matchesRequirements, requirementsOf } from './selectors.ts';
import type { Store } from './store.ts';
import type { KubeObject, LabelSelectorSpec } from './types.ts';

/**
 * kube-controller-manager's ClusterRole aggregation controller, written again from
 * https://kubernetes.io/docs/reference/access-authn-authz/rbac/#aggregated-clusterroles and
 * pkg/controller/clusterroleaggregation/clusterroleaggregation_controller.go (syncClusterRole):
 *  - a ClusterRole with `aggregationRule.clusterRoleSelectors` has its `rules` written by the
 *    controller: the rules of every other ClusterRole that any selector matches, selectors in order,
 *    the matched roles in name order, each rule once (a rule already taken is not added again);
 *  - whatever the role's own `rules` said is overwritten ("any rules you manually specify ... will be
 *    overwritten by the controller", the docs);
 *  - any ClusterRole change re-syncs every aggregated role, so aggregation nests (an aggregated role
 *    that another one selects passes on what it gathered) and a label removed takes its rules away.
 */
const CLUSTER_ROLES = 'clusterroles.rbac.authorization.k8s.io';

interface ClusterRole extends KubeObject {
  rules?: unknown[] | null;
  aggregationRule?: { clusterRoleSelectors?: LabelSelectorSpec[] } | null;
}

export class ClusterRoleAggregation {
  private dirty = false;

  constructor(private readonly store: Store) {
    store.subscribe((e) => {
      if (e.resource === CLUSTER_ROLES) this.dirty = true;
    });
  }

  /** Brings every aggregated ClusterRole's rules up to date; each change is an ordinary update. */
  settle(): void {
    // Nested aggregation converges in at most one pass per aggregated role; the bound stops a cycle
    // of roles selecting each other from spinning (the real controller would keep requeueing too).
    for (let pass = 0; this.dirty && pass < 16; pass++) {
      this.dirty = false;
      const roles = this.store.list(CLUSTER_ROLES) as ClusterRole[];
      for (const role of roles) {
        const selectors = role.aggregationRule?.clusterRoleSelectors;
        if (!selectors) continue;
        const rules = aggregate(role.metadata.name, selectors, this.store.list(CLUSTER_ROLES) as ClusterRole[]);
        if (isDeepStrictEqual(rules, role.rules ?? [])) continue;
        this.store.put(CLUSTER_ROLES, { ...role, rules } as KubeObject);
      }
    }
  }
}

/** syncClusterRole's union: selectors in order, matches by name, itself skipped, duplicates dropped. */
export function aggregate(self: string, selectors: LabelSelectorSpec[], roles: ClusterRole[]): unknown[] {
  const out: unknown[] = [];
  const byName = [...roles].sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1));
  for (const sel of selectors) {
    const reqs = requirementsOf(sel);
    for (const r of byName) {
      if (r.metadata.name === self || !matchesRequirements(r.metadata.labels, reqs)) continue;
      for (const rule of r.rules ?? []) if (!out.some((x) => isDeepStrictEqual(x, rule))) out.push(rule);
    }
  }
  return out;
}
