import { readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';
import { describe, expect, it } from 'vitest';
import { KUBE_RBAC_RULES, missingRbac, flattenRbac, type RbacRule } from '../../functions/adapters/kube/rbac.ts';
import { ManualClock } from '../../infra/local/kube/clock.ts';
import { Cluster } from '../../infra/local/kube/cluster.ts';
import { authorize } from '../../infra/local/kube/rbac.ts';
import { resource } from '../../infra/local/kube/resources.ts';
import { FUNCTIONS_USER, installShippedRbac, type ShippedComponent } from '../../infra/local/kube/shipped-rbac.ts';
import { CGPU_REQUESTS, REFUSED, STACK_REQUESTS, type StackRequest } from './stack-requests.ts';

// The base, and the opt-in ACK cGPU component (its kube-system ConfigMaps for card fences).
const load = (f: string) =>
  parseAllDocuments(readFileSync(new URL(`../../infra/k8s/${f}`, import.meta.url), 'utf8')).map(
    (d) => d.toJS() as { kind: string; metadata?: { namespace?: string }; rules?: RbacRule[] },
  );
const cgpuDocs = load('ack-cgpu/rbac.yaml');
const docs = [...load('functions-rbac.yaml'), ...cgpuDocs];
const granted = docs.filter((d) => d.kind === 'ClusterRole' || d.kind === 'Role').flatMap((d) => d.rules ?? []);

describe('infra/k8s RBAC for the functions', () => {
  it('grants every verb the adapters use', () => {
    expect(missingRbac(KUBE_RBAC_RULES, granted)).toEqual([]);
  });

  it('grants nothing the adapters do not use (least privilege)', () => {
    expect(missingRbac(granted, KUBE_RBAC_RULES)).toEqual([]);
    expect(flattenRbac(granted).some((p) => p.includes('*'))).toBe(false);
  });

  it('never lets the functions delete pods directly', () => {
    expect(flattenRbac(granted)).not.toContain('/pods delete');
  });
});

describe("docs/kube-adapter.md's RBAC table", () => {
  it("is the adapters' list, row for row", () => {
    const doc = readFileSync(new URL('../../docs/kube-adapter.md', import.meta.url), 'utf8');
    const table = doc.slice(doc.indexOf('| apiGroups | resources | verbs |'));
    const lines = table.split('\n');
    const rows = lines
      .slice(
        2,
        lines.findIndex((l) => !l.startsWith('|')),
      )
      .map((l) => {
        const [group = '', resource = '', verbs = ''] = l
          .split('|')
          .slice(1, 4)
          .map((c) => c.trim());
        return {
          apiGroups: [group.replace(/`/g, '').replace(/^""$/, '')],
          resources: [resource],
          verbs: verbs.split(',').map((v) => v.trim()),
        };
      });
    expect(rows.length).toBeGreaterThan(0);
    expect(flattenRbac(rows)).toEqual(flattenRbac(KUBE_RBAC_RULES));
  });
});

describe('infra/k8s RBAC for the node agent actuator', () => {
  const actuator = parseAllDocuments(
    readFileSync(new URL('../../infra/k8s/actuator/rbac.yaml', import.meta.url), 'utf8'),
  ).map((d) => d.toJS() as { kind: string; rules?: RbacRule[]; subjects?: { name: string }[] });
  it('grants exactly what node-agent/actuator/ports.ts and plugin-dra.ts call, bound to the agent', () => {
    const role = actuator.find((d) => d.kind === 'ClusterRole')!;
    expect(role.rules).toEqual([
      { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'patch'] },
      { apiGroups: ['resource.k8s.io'], resources: ['resourceslices'], verbs: ['list'] },
    ]);
    const dra = readFileSync(new URL('../../node-agent/plugin-dra.ts', import.meta.url), 'utf8');
    expect(dra.match(/custom\.(\w+)\(/g)).toEqual(['custom.listClusterCustomObject(']);
    expect(dra).toContain("plural: 'resourceslices'");
    const calls = readFileSync(new URL('../../node-agent/actuator/ports.ts', import.meta.url), 'utf8').match(
      /core\.(\w+)\(/g,
    );
    expect([...new Set(calls)].sort()).toEqual(['core.patchNode(', 'core.readNode(']);
    expect(actuator.find((d) => d.kind === 'ClusterRoleBinding')!.subjects).toEqual([
      expect.objectContaining({ name: 'gpu-reflex-node-agent' }),
    ]);
  });
});

describe('infra/k8s RBAC for the paused reset (component actuator-reset-pause)', () => {
  const docs = parseAllDocuments(
    readFileSync(new URL('../../infra/k8s/actuator-reset-pause/rbac.yaml', import.meta.url), 'utf8'),
  ).map((d) => d.toJS() as { kind: string; metadata: { namespace?: string }; rules?: RbacRule[] });
  it("grants pods list in the GPU Operator's namespace only, for what operator-ports.ts calls beyond the actuator", () => {
    const role = docs.find((d) => d.kind === 'Role')!;
    expect(role.metadata.namespace).toBe('gpu-operator');
    expect(role.rules).toEqual([{ apiGroups: [''], resources: ['pods'], verbs: ['list'] }]);
    const calls = readFileSync(new URL('../../node-agent/actuator/operator-ports.ts', import.meta.url), 'utf8').match(
      /core\.(\w+)\(/g,
    );
    // readNode and patchNode: the actuator's ClusterRole (nodes get, patch) already grants them.
    expect([...new Set(calls)].sort()).toEqual(['core.listNamespacedPod(', 'core.patchNode(', 'core.readNode(']);
  });
});

/**
 * Verbs and resources are not the whole grant: where (namespace) and which objects (resourceNames) the
 * shipped Roles reach is what stops the functions' ServiceAccount from rewriting the GPU Operator's own
 * mig-parted ConfigMap, faking node heartbeats or reading tenants' ConfigMaps. Each request the stack
 * makes — with the namespace and name its adapters use (the constants below are the adapters' own) — is
 * put to the simulated API server's RBAC authorizer (infra/local/kube/rbac.ts, written from kube-apiserver's
 * rules) over `kubectl apply -k infra/k8s`'s objects, as the ServiceAccount; so are the requests it must be
 * refused. The e2e run (test/e2e/local-identities.test.ts) holds the stack's actual writes to this table.
 */
describe("infra/k8s RBAC, namespaces and resourceNames, as the functions' ServiceAccount", () => {
  const sa = {
    name: FUNCTIONS_USER,
    groups: ['system:serviceaccounts', 'system:serviceaccounts:gpu-reflex', 'system:authenticated'],
  };
  function cluster(components: ShippedComponent[]): Cluster {
    const c = new Cluster(new ManualClock());
    for (const name of ['gpu-reflex', 'gpu-operator', 'kube-system', 'kube-node-lease', 'ml-infer', 'default'])
      if (!c.store.get('namespaces', '', name)) c.create(resource('namespaces'), '', { metadata: { name } });
    expect(installShippedRbac(c, components)).toEqual([]);
    return c;
  }
  const base = cluster([]);
  const cgpu = cluster(['ack-cgpu']);
  const can = (c: Cluster, r: StackRequest) => authorize(c.store, sa, r).allowed;
  const show = (r: StackRequest) =>
    `${r.verb} ${r.group ? `${r.group}/` : ''}${r.resource}${r.subresource ? `/${r.subresource}` : ''}` +
    ` ${r.namespace ?? '(cluster)'}${r.name ? `/${r.name}` : ''}`;

  it('allows every request the stack makes, where it makes it', () => {
    expect(STACK_REQUESTS.filter((r) => !can(base, r)).map(show)).toEqual([]);
    expect(CGPU_REQUESTS.filter((r) => !can(cgpu, r)).map(show)).toEqual([]);
  });

  it('refuses what lies outside them: other namespaces, other names, other kinds', () => {
    expect(REFUSED.filter((r) => can(base, r)).map(show)).toEqual([]);
    expect(REFUSED.filter((r) => can(cgpu, r)).map(show)).toEqual([]);
    // Without the ack-cgpu component, kube-system's ConfigMaps are not the functions' at all.
    expect(CGPU_REQUESTS.filter((r) => can(base, r)).map(show)).toEqual([]);
  });

  it('names in resourceNames only objects the stack uses, and grants namespaced rules only in namespaces it uses', () => {
    const used = [...STACK_REQUESTS, ...CGPU_REQUESTS];
    for (const d of docs) {
      if (d.kind !== 'Role') continue;
      const ns = d.metadata?.namespace;
      for (const rule of (d.rules ?? []) as (RbacRule & { resourceNames?: string[] })[]) {
        for (const res of rule.resources) {
          const here = used.filter((u) => u.namespace === ns && u.resource === res.split('/')[0]);
          expect({ role: d.kind, ns, res, used: here.length > 0 }).toEqual({ role: d.kind, ns, res, used: true });
          for (const n of rule.resourceNames ?? []) expect(here.map((u) => u.name)).toContain(n);
        }
      }
    }
  });
});
