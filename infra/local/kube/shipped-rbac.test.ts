import { describe, expect, it } from 'vitest';
import { ManualClock } from './clock.ts';
import { Cluster } from './cluster.ts';
import { authorize, type Attributes } from './rbac.ts';
import { resource } from './resources.ts';
import { AGENT_USER, FUNCTIONS_USER, installShippedRbac, shippedIdentityObjects } from './shipped-rbac.ts';

/** The embedded stack's identities: infra/k8s's RBAC as `kubectl apply -k` installs it, then decided by RBAC. */
const sa = (user: string) => {
  const ns = user.split(':')[2]!;
  return { name: user, groups: ['system:serviceaccounts', `system:serviceaccounts:${ns}`, 'system:authenticated'] };
};
const res = (
  verb: string,
  r: string,
  namespace?: string,
  more: Partial<Extract<Attributes, { resource: string }>> = {},
) => ({ verb, group: '', resource: r, ...(namespace ? { namespace } : {}), ...more }) as Attributes;

function cluster(namespaces: string[]): Cluster {
  const c = new Cluster(new ManualClock());
  for (const name of namespaces) c.create(resource('namespaces'), '', { metadata: { name } });
  return c;
}

describe("infra/k8s's RBAC in the simulated cluster", () => {
  it('renders the kustomization: namespace, both ServiceAccounts, the functions roles and bindings', () => {
    const names = shippedIdentityObjects().map((o) => `${o.kind}/${o.metadata.name}`);
    expect(names).toEqual(
      expect.arrayContaining([
        'Namespace/gpu-reflex',
        'ServiceAccount/gpu-reflex-node-agent',
        'ServiceAccount/gpu-reflex-functions',
        'ClusterRole/gpu-reflex-functions',
        'ClusterRoleBinding/gpu-reflex-functions',
        'RoleBinding/gpu-reflex-functions-state',
      ]),
    );
    expect(names).not.toContain('ClusterRole/gpu-reflex-node-agent-actuator');
    expect(shippedIdentityObjects(['actuator']).map((o) => o.metadata.name)).toContain(
      'gpu-reflex-node-agent-actuator',
    );
  });

  it('the functions may do what functions-rbac.yaml grants, where it grants it, and nothing else', () => {
    const c = cluster(['gpu-operator', 'serve']);
    expect(installShippedRbac(c)).toEqual([]);
    const f = sa(FUNCTIONS_USER);
    const may = (a: Attributes) => authorize(c.store, f, a).allowed;
    expect(may(res('patch', 'nodes'))).toBe(true);
    expect(may(res('create', 'pods', 'serve', { subresource: 'eviction' }))).toBe(true);
    expect(may(res('delete', 'pods', 'serve'))).toBe(false);
    expect(may(res('update', 'configmaps', 'gpu-reflex'))).toBe(true);
    expect(may(res('update', 'configmaps', 'serve'))).toBe(false);
    expect(may(res('update', 'configmaps', 'gpu-operator', { name: 'gpu-reflex-mig-parted-config' }))).toBe(true);
    expect(may(res('update', 'configmaps', 'gpu-operator', { name: 'default-mig-parted-config' }))).toBe(false);
    // The first relayout creates the mig-parted ConfigMap (found by running the default scenario as the SA).
    expect(may(res('create', 'configmaps', 'gpu-operator'))).toBe(true);
  });

  it('the agent has no API access without the actuator component, get/patch nodes with it', () => {
    const bare = cluster([]);
    installShippedRbac(bare);
    expect(authorize(bare.store, sa(AGENT_USER), res('get', 'nodes', undefined, { name: 'n1' })).allowed).toBe(false);
    const act = cluster([]);
    installShippedRbac(act, ['actuator']);
    expect(authorize(act.store, sa(AGENT_USER), res('patch', 'nodes', undefined, { name: 'n1' })).allowed).toBe(true);
    expect(authorize(act.store, sa(AGENT_USER), res('list', 'pods', 'gpu-operator')).allowed).toBe(false);
  });

  it('leaves out what lives in a namespace the cluster lacks, and says so; an existing namespace is kept', () => {
    const c = cluster(['gpu-reflex']);
    expect(installShippedRbac(c, ['actuator', 'actuator-reset-pause'])).toEqual([
      'Role gpu-operator/gpu-reflex-functions-mig-parted (no namespace gpu-operator)',
      'RoleBinding gpu-operator/gpu-reflex-functions-mig-parted (no namespace gpu-operator)',
      'Role gpu-operator/gpu-reflex-node-agent-reset-pause (no namespace gpu-operator)',
      'RoleBinding gpu-operator/gpu-reflex-node-agent-reset-pause (no namespace gpu-operator)',
    ]);
  });
});
