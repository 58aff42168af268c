/**
 * Whose mig-parted ConfigMap it is: gpu-reflex writes its layouts only into a ConfigMap the GPU
 * Operator leaves alone. The operator creates `default-mig-parted-config` with a controller reference
 * to its ClusterPolicy and, when it exists, replaces it with its shipped content on every reconcile
 * (NVIDIA/gpu-operator controllers/object_controls.go createConfigMap: SetControllerReference, then
 * Create or Update) — a reconcile follows, among others, a new GPU node (clusterpolicy_controller.go
 * addWatchNewGPUNode). Its Helm chart's own `migManager.config` ConfigMap carries the chart's labels
 * (`app.kubernetes.io/managed-by: Helm`): the next `helm upgrade` puts its data back. Entries written
 * into either vanish, mig-manager fails on the node's label, and the node stays cordoned. Pure.
 */
import type { ClusterPolicyMigConfig, ConfigMapOwnership } from '../../adapters/kube/ports.ts';

/** The GPU Operator's own mig-parted ConfigMap (its `MigPartedDefaultConfigMapName`). */
export const OPERATOR_MIG_PARTED_CONFIGMAP = 'default-mig-parted-config';
/** The ClusterPolicy field that points mig-manager at another ConfigMap (key `config.yaml`). */
export const CLUSTER_POLICY_MIG_CONFIG_FIELD = 'spec.migManager.config.name';

/** What to set instead, in words: the same advice whichever way the ConfigMap is someone else's. */
export function ownConfigAdvice(namespace: string): string {
  return (
    `use a ConfigMap of gpu-reflex's own (MIG_PARTED_CONFIGMAP=${namespace}/gpu-reflex-mig-parted-config, the ` +
    `default; gpu-reflex creates it) and name it in the ClusterPolicy's ${CLUSTER_POLICY_MIG_CONFIG_FIELD} ` +
    `(${clusterPolicyPatch('cluster-policy', 'gpu-reflex-mig-parted-config')})`
  );
}

/**
 * Why gpu-reflex must not write into this ConfigMap, or undefined when it may (its own, or absent:
 * it will be created as gpu-reflex's).
 */
export function partedConfigRefusal(
  ref: { namespace: string; name: string },
  owner: ConfigMapOwnership | undefined,
): string | undefined {
  const where = `${ref.namespace}/${ref.name}`;
  if (ref.name === OPERATOR_MIG_PARTED_CONFIGMAP)
    return (
      `${where} is the GPU Operator's own mig-parted ConfigMap: it rewrites it with its shipped content on every ` +
      `ClusterPolicy reconcile (a new GPU node joins), so gpu-reflex's layouts would vanish; ` +
      ownConfigAdvice(ref.namespace)
    );
  const policy = owner?.ownerReferences.find(
    (o) => o.kind === 'ClusterPolicy' && o.apiVersion.startsWith('nvidia.com/'),
  );
  if (policy)
    return (
      `${where} is owned by the GPU Operator's ClusterPolicy ${policy.name} (ownerReference): the operator ` +
      `rewrites it on reconcile; ${ownConfigAdvice(ref.namespace)}`
    );
  const by = owner?.labels['app.kubernetes.io/managed-by'];
  if (by && by !== 'gpu-reflex')
    return (
      `${where} is managed by ${by} (label app.kubernetes.io/managed-by): its next upgrade puts the data back; ` +
      ownConfigAdvice(ref.namespace)
    );
  return undefined;
}

/** The one command that makes ClusterPolicy `policy` point mig-manager at ConfigMap `name`. */
export function clusterPolicyPatch(policy: string, name: string): string {
  return (
    `kubectl patch clusterpolicies.nvidia.com ${policy} --type merge -p ` +
    `'{"spec":{"migManager":{"config":{"name":"${name}"}}}}'`
  );
}

/**
 * Why mig-manager would not read what gpu-reflex writes, or undefined when it would: each ClusterPolicy
 * the operator acts on (not `ignored`) must name our ConfigMap in spec.migManager.config.name — unset,
 * mig-manager reads the operator's own default-mig-parted-config (NVIDIA/gpu-operator
 * api/nvidia/v1/clusterpolicy_types.go MIGManagerSpec.Config; object_controls.go). No ClusterPolicy (or
 * the kind not served): no GPU Operator here, a static mig-manager reads its CONFIG_FILE, which the
 * operator of the cluster points at this ConfigMap (docs/mig.md); nothing to read, nothing refused.
 */
export function clusterPolicyRefusal(
  ref: { namespace: string; name: string },
  policies: readonly ClusterPolicyMigConfig[] | undefined,
): string | undefined {
  const wrong = (policies ?? []).filter((p) => !p.ignored && p.configName !== ref.name);
  if (wrong.length === 0) return undefined;
  return wrong
    .map(
      (p) =>
        `the GPU Operator's ClusterPolicy ${p.name} has spec.migManager.config.name ` +
        `${p.configName ?? `unset (mig-manager reads the operator's ${OPERATOR_MIG_PARTED_CONFIGMAP})`}, not ` +
        `${ref.name}: mig-manager would never see gpu-reflex's layouts (the node would wait for a layout that ` +
        `never comes); set it with: ${clusterPolicyPatch(p.name, ref.name)}`,
    )
    .join('; ');
}
