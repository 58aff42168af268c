import { describe, expect, it } from 'vitest';
import { ManualClock } from './clock.ts';
import { Cluster } from './cluster.ts';
import { authorize, type UserInfo } from './rbac.ts';
import { resource } from './resources.ts';

/**
 * Aggregated ClusterRoles as kube-controller-manager fills them
 * (https://kubernetes.io/docs/reference/access-authn-authz/rbac/#aggregated-clusterroles): the
 * controller writes the union of the selected roles' rules into the aggregated one, and RBAC
 * authorizes with those.
 */
const CR = 'clusterroles.rbac.authorization.k8s.io';
const crs = resource('clusterroles');
const crbs = resource('clusterrolebindings');
const user: UserInfo = { name: 'dana', groups: ['system:authenticated'] };

function cluster(): Cluster {
  const c = new Cluster(new ManualClock());
  c.create(crs, '', {
    metadata: { name: 'monitoring' },
    aggregationRule: {
      clusterRoleSelectors: [{ matchLabels: { 'rbac.example.com/aggregate-to-monitoring': 'true' } }],
    },
    // The controller overwrites whatever is written here (the docs' warning).
    rules: [{ apiGroups: [''], resources: ['secrets'], verbs: ['get'] }],
  });
  c.create(crbs, '', {
    metadata: { name: 'dana-monitoring' },
    subjects: [{ kind: 'User', name: 'dana' }],
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'monitoring' },
  });
  return c;
}
const can = (c: Cluster, verb: string, r: string) =>
  authorize(c.store, user, { verb, group: '', resource: r, namespace: 'x' }).allowed;

describe('ClusterRole aggregation', () => {
  it("overwrites the aggregated role's own rules with what its selectors match (none yet: nothing)", () => {
    const c = cluster();
    expect(c.store.get(CR, '', 'monitoring')).toMatchObject({ rules: [] });
    expect(can(c, 'get', 'secrets')).toBe(false);
  });

  it('a labelled ClusterRole created later adds its rules, and removing the label takes them away', () => {
    const c = cluster();
    c.create(crs, '', {
      metadata: { name: 'monitoring-endpoints', labels: { 'rbac.example.com/aggregate-to-monitoring': 'true' } },
      rules: [{ apiGroups: [''], resources: ['services', 'endpoints', 'pods'], verbs: ['get', 'list', 'watch'] }],
    });
    expect(can(c, 'list', 'pods')).toBe(true);
    expect(can(c, 'delete', 'pods')).toBe(false);
    const labelled = c.store.get(CR, '', 'monitoring-endpoints')!;
    c.replace(crs, '', 'monitoring-endpoints', { ...labelled, metadata: { ...labelled.metadata, labels: {} } });
    expect(can(c, 'list', 'pods')).toBe(false);
  });

  it('takes selectors in order and matched roles by name, each rule once, never its own', () => {
    const c = cluster();
    const rule = { apiGroups: [''], resources: ['nodes'], verbs: ['get'] };
    const l = { 'rbac.example.com/aggregate-to-monitoring': 'true' };
    c.create(crs, '', {
      metadata: { name: 'b', labels: l },
      rules: [rule, { apiGroups: [''], resources: ['pods'], verbs: ['list'] }],
    });
    c.create(crs, '', { metadata: { name: 'a', labels: l }, rules: [rule] });
    expect((c.store.get(CR, '', 'monitoring') as unknown as { rules: unknown[] }).rules).toEqual([
      rule,
      { apiGroups: [''], resources: ['pods'], verbs: ['list'] },
    ]);
  });

  it('nests: a role aggregated into another passes on what it gathered', () => {
    const c = cluster();
    c.create(crs, '', {
      metadata: { name: 'view-extra', labels: { 'rbac.example.com/aggregate-to-monitoring': 'true' } },
      aggregationRule: { clusterRoleSelectors: [{ matchExpressions: [{ key: 'extra', operator: 'Exists' }] }] },
    });
    c.create(crs, '', {
      metadata: { name: 'leases-reader', labels: { extra: '' } },
      rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get'] }],
    });
    expect(can(c, 'get', 'configmaps')).toBe(true);
  });
});
