import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import type { Cluster } from './cluster.ts';
import { qualifiedName, resourceForKind } from './resources.ts';
import type { KubeObject } from './types.ts';

/**
 * The identities and RBAC gpu-reflex ships in infra/k8s, installed in the simulated cluster as
 * `kubectl apply -k infra/k8s` would install them, so the embedded stack's functions and agents run
 * as their ServiceAccounts under exactly those rules: a rule missing from the manifests is a 403 in
 * a scenario, as it would be in a real cluster. The kustomization is rendered by reading it (its
 * `resources`, and the components the scenario needs, as docs/deploy.md tells people to enable them);
 * only the identity kinds are taken, so the fleet's own objects (and their counts) are unchanged.
 */
const INFRA_K8S = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'k8s');

/** Who the functions are in the cluster (infra/k8s/functions-identity.yaml, bound by functions-rbac.yaml). */
export const FUNCTIONS_USER = 'system:serviceaccount:gpu-reflex:gpu-reflex-functions';
/** Who the node agents are (infra/k8s/node-agent.yaml's ServiceAccount; the actuator component binds it). */
export const AGENT_USER = 'system:serviceaccount:gpu-reflex:gpu-reflex-node-agent';

/** The optional kustomize components under infra/k8s whose RBAC a scenario may need. */
export type ShippedComponent = 'actuator' | 'actuator-reset-pause' | 'ack-cgpu';

const IDENTITY_KINDS = new Set([
  'Namespace',
  'ServiceAccount',
  'ClusterRole',
  'ClusterRoleBinding',
  'Role',
  'RoleBinding',
]);

function documents(file: string): KubeObject[] {
  return parseAllDocuments(readFileSync(file, 'utf8'))
    .map((d) => d.toJS() as KubeObject | null)
    .filter((o): o is KubeObject => o !== null && typeof o === 'object');
}

/** A kustomization's (or component's) `resources` files, in order, with its directory. */
function resourcesOf(dir: string): KubeObject[] {
  const k = documents(join(dir, 'kustomization.yaml'))[0] as { resources?: string[] } | undefined;
  return (k?.resources ?? []).flatMap((f) => documents(join(dir, f)));
}

/** The identity objects `kubectl apply -k infra/k8s` creates with these components enabled. */
export function shippedIdentityObjects(components: readonly ShippedComponent[] = []): KubeObject[] {
  const all = [
    ...resourcesOf(INFRA_K8S),
    ...components.flatMap((c) => {
      const dir = join(INFRA_K8S, c);
      if (!existsSync(join(dir, 'kustomization.yaml'))) throw new Error(`infra/k8s has no component ${c}`);
      return resourcesOf(dir);
    }),
  ];
  return all.filter((o) => IDENTITY_KINDS.has(String((o as { kind?: unknown }).kind)));
}

/**
 * Creates the shipped identity objects that are not there yet (a fleet may already have the
 * namespace). A namespaced object whose namespace the fleet lacks is left out and named in the
 * result (the mig-parted Role lives in gpu-operator, which the GPU Operator creates): a real
 * `kubectl apply` would fail on it, and nothing in that namespace exists for it to guard.
 */
export function installShippedRbac(cluster: Cluster, components: readonly ShippedComponent[] = []): string[] {
  const skipped: string[] = [];
  const objects = shippedIdentityObjects(components);
  // Namespaces first, as kubectl apply orders them.
  objects.sort((a, b) => Number(b.kind === 'Namespace') - Number(a.kind === 'Namespace'));
  for (const o of objects) {
    const r = resourceForKind(o.kind);
    if (!r) throw new Error(`infra/k8s: kind ${o.kind} is not served by the simulated cluster`);
    const ns = r.namespaced ? (o.metadata.namespace ?? 'default') : '';
    if (cluster.store.get(qualifiedName(r), ns, o.metadata.name)) continue;
    if (ns !== '' && !cluster.store.get('namespaces', '', ns)) {
      skipped.push(`${o.kind} ${ns}/${o.metadata.name} (no namespace ${ns})`);
      continue;
    }
    cluster.create(r, ns, o);
  }
  return skipped;
}
