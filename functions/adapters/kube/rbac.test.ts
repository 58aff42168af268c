import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { KUBE_RBAC_RULES, flattenRbac, missingRbac } from './rbac.ts';

const here = dirname(fileURLToPath(import.meta.url));

/** Every `// RBAC: [group] resource verb, verb` comment in the real adapters, flattened. */
function rbacFromComments(): { perms: string[]; methods: number } {
  const perms = new Set<string>();
  let methods = 0;
  for (const file of readdirSync(here).filter(
    (f) => f.startsWith('kube-') && f.endsWith('.ts') && !f.endsWith('.test.ts'),
  )) {
    for (const m of readFileSync(join(here, file), 'utf8').matchAll(/\/\/ RBAC: (.+)$/gm)) {
      methods++;
      const words = (m[1] ?? '').replace(/,/g, ' ').split(/\s+/).filter(Boolean);
      const group = words[0]?.includes('.') ? (words.shift() ?? '') : '';
      const [resource, ...verbs] = words;
      for (const v of verbs) perms.add(`${group}/${resource} ${v}`);
    }
  }
  return { perms: [...perms].sort(), methods };
}

describe('KUBE_RBAC_RULES', () => {
  it('lists exactly the permissions the adapter methods declare in their RBAC comments', () => {
    const { perms, methods } = rbacFromComments();
    expect(methods).toBeGreaterThan(20);
    expect(flattenRbac(KUBE_RBAC_RULES)).toEqual(perms);
  });

  it('lets the functions record Events (create only, in events.k8s.io)', () => {
    expect(flattenRbac(KUBE_RBAC_RULES).filter((p) => p.includes('events'))).toEqual(['events.k8s.io/events create']);
  });

  it('every public method of each Kube* class declares its RBAC', () => {
    for (const file of readdirSync(here).filter((f) => /^kube-.*-ops\.ts$|^kube-state-store\.ts$/.test(f))) {
      const lines = readFileSync(join(here, file), 'utf8').split('\n');
      lines.forEach((line, i) => {
        // Public methods are the two-space-indented, non-private, non-constructor members.
        if (/^ {2}(async )?[a-z]\w*(<[^>]*>)?\(/.test(line) && !line.includes('constructor')) {
          expect(lines[i - 1], `${file}:${i + 1} ${line.trim()}`).toMatch(/\/\/ RBAC: /);
        }
      });
    }
  });
});

describe('missingRbac', () => {
  it('reports nothing when a role grants everything listed', () => {
    expect(missingRbac(KUBE_RBAC_RULES, KUBE_RBAC_RULES)).toEqual([]);
  });

  it('names each permission a role lacks', () => {
    const granted = KUBE_RBAC_RULES.filter((r) => !r.resources.includes('pods/eviction'));
    expect(missingRbac(KUBE_RBAC_RULES, granted)).toEqual(['/pods/eviction create']);
  });

  it('honours wildcards in groups, resources and verbs', () => {
    expect(missingRbac(KUBE_RBAC_RULES, [{ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }])).toEqual([]);
    expect(missingRbac(KUBE_RBAC_RULES, [{ apiGroups: [''], resources: ['*'], verbs: ['*'] }])).toEqual([
      'coordination.k8s.io/leases create',
      'coordination.k8s.io/leases delete',
      'coordination.k8s.io/leases get',
      'coordination.k8s.io/leases update',
      'events.k8s.io/events create',
      'kueue.x-k8s.io/workloads list',
      'nvidia.com/clusterpolicies list',
      'resource.k8s.io/devicetaintrules create',
      'resource.k8s.io/devicetaintrules delete',
      'resource.k8s.io/devicetaintrules list',
      'resource.k8s.io/resourceslices list',
      'scheduling.volcano.sh/podgroups list',
    ]);
  });
});
