import { readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';
import { describe, expect, it } from 'vitest';
import { KUBE_RBAC_RULES, missingRbac, flattenRbac, type RbacRule } from '../../functions/adapters/kube/rbac.ts';

const docs = parseAllDocuments(readFileSync(new URL('../../infra/k8s/functions-rbac.yaml', import.meta.url), 'utf8')).map((d) => d.toJS() as { kind: string; rules?: RbacRule[] });
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
