import { readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';
import { describe, expect, it } from 'vitest';
import { KUBE_RBAC_RULES, missingRbac, flattenRbac, type RbacRule } from '../../functions/adapters/kube/rbac.ts';

// The base, and the opt-in ACK cGPU component (its kube-system ConfigMaps for card fences).
const docs = ['functions-rbac.yaml', 'ack-cgpu/rbac.yaml'].flatMap((f) =>
  parseAllDocuments(readFileSync(new URL(`../../infra/k8s/${f}`, import.meta.url), 'utf8')).map(
    (d) => d.toJS() as { kind: string; rules?: RbacRule[] },
  ),
);
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
  it('grants exactly what node-agent/actuator/ports.ts calls (get and patch nodes), bound to the agent', () => {
    const role = actuator.find((d) => d.kind === 'ClusterRole')!;
    expect(role.rules).toEqual([{ apiGroups: [''], resources: ['nodes'], verbs: ['get', 'patch'] }]);
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
