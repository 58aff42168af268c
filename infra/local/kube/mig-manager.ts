import { OPERATOR_MIG_PARTED_CONFIGMAP, OPERATOR_SHIPPED_MIG_CONFIG, partedLayout } from './mig-parted.ts';
import { parseQuantity } from './quantity.ts';
import type { Store, StoreEvent } from './store.ts';
import type { Node } from './types.ts';

/**
 * NVIDIA mig-manager, simulated: setting the node label `nvidia.com/mig.config=<name>` starts a
 * reconfiguration. The manager writes `nvidia.com/mig.config.state=pending`, and after
 * `reconfigureSeconds` on the cluster clock replaces the node's `nvidia.com/mig-*` capacity and
 * allocatable (and GPU Feature Discovery's `nvidia.com/mig-<profile>.count` labels) with the
 * named layout's, then writes `success`; an unknown layout name ends in `failed`.
 * Like the real one it never evicts pods: the caller must drain first (docs/mig.md).
 *
 * Like the real one it also applies the label's config when its pod starts (a new pod of the GPU
 * Operator's `nvidia-mig-manager` DaemonSet on the node: its informer's first sight of the Node),
 * and never on a label set again to the same value. The real one first asserts the config against
 * NVML and skips GPUs already so; this one cannot see NVML, so it applies the config each time, which
 * for an unchanged GPU changes nothing. The pod that runs when the simulation starts is taken to
 * have applied it already. Every apply stamps `sim.gpu-reflex.io/mig-applied` on the node, so the
 * local stack rewrites the mock NVML's `migFile` even when the layout did not change: that is how
 * a GPU a reset emptied gets its instances back.
 *
 * A named mig-parted config is read in mig-parted.ts.
 *
 * Layouts are per node, as device-plugin resources: `{ "all-1g.10gb": { "nvidia.com/mig-1g.10gb": 56 } }`.
 */
export type MigLayouts = Record<string, Record<string, string | number>>;

const CONFIG = 'nvidia.com/mig.config';
const STATE = 'nvidia.com/mig.config.state';
const MIG_RESOURCE = /^nvidia\.com\/mig-(.+)$/;
const MIG_COUNT_LABEL = /^nvidia\.com\/mig-.+\.count$/;

/** Where NVIDIA's mig-manager runs under the GPU Operator (its DaemonSet's namespace and pod label). */
export const MIG_MANAGER_POD = { namespace: 'gpu-operator', labels: { app: 'nvidia-mig-manager' } } as const;
/** When the simulated mig-manager last applied a config to the node (the stack rewrites the migFile then). */
export const SIM_MIG_APPLIED_ANNOTATION = 'sim.gpu-reflex.io/mig-applied';

export class MigManager {
  /** Node → the config it must move to, and when it is done (undefined until `pending` is written). */
  private readonly work = new Map<string, { config: string; due?: number }>();
  /** Node → the uid of the mig-manager pod seen running there. */
  private readonly pods = new Map<string, string>();
  /** Nodes where a new mig-manager pod started since the last settle. */
  private readonly started = new Set<string>();

  /** A GPU node joined since the last settle: the GPU Operator reconciles its ClusterPolicy. */
  private reconcile = false;

  constructor(
    private readonly layouts: MigLayouts,
    private readonly reconfigureSeconds: number,
    /** The ClusterPolicy's `spec.migManager.config.name` (its default: the operator's own ConfigMap). */
    private readonly configMap: string = OPERATOR_MIG_PARTED_CONFIGMAP.name,
    /**
     * Seconds after `success` until the Node's `nvidia.com/mig-*` allocatable shows the new layout (0 until
     * then). mig-manager pauses the device plugin while it works and restarts it after; the kubelet then
     * reports the plugin's devices in its next node status (every 10 s by default: kubelet
     * nodeStatusUpdateFrequency, https://kubernetes.io/docs/reference/config-api/kubelet-config.v1beta1/).
     * Default 0: at once, with `success`.
     */
    private readonly allocatableLagSeconds = 0,
  ) {}

  /** Node → when the kubelet reports the new layout's devices, and their counts. */
  private readonly lagged = new Map<string, { due: number; resources: Record<string, string | number> }>();

  observe(e: StoreEvent): void {
    if (e.resource === 'pods') return this.observePod(e);
    // The GPU Operator reconciles when a GPU node is created (clusterpolicy_controller.go
    // addWatchNewGPUNode: a Create of a node with GPU labels), which the autoscaler causes.
    if (e.resource === 'nodes' && e.type === 'ADDED' && hasGpuLabels(e.object.metadata.labels)) this.reconcile = true;
    if (e.resource !== 'nodes' || e.type !== 'MODIFIED') return;
    const before = e.previous?.metadata.labels?.[CONFIG];
    const after = e.object.metadata.labels?.[CONFIG];
    if (after !== undefined && after !== before) this.work.set(e.object.metadata.name, { config: after });
  }

  /**
   * The GPU Operator's ClusterPolicy reconcile, as far as MIG goes: its own `default-mig-parted-config` is
   * replaced with the shipped content whenever it exists (object_controls.go createConfigMap: Create, or
   * Update when it exists — whatever anyone wrote into it is gone); a ConfigMap the ClusterPolicy names
   * instead is never touched (and the default is not created then).
   */
  private reconcileOperator(store: Store): void {
    this.reconcile = false;
    const { namespace, name, key } = OPERATOR_MIG_PARTED_CONFIGMAP;
    if (this.configMap !== name) return;
    const cm = store.get('configmaps', namespace, name) as
      (ReturnType<Store['get']> & { data?: Record<string, string> }) | undefined;
    if (!cm || cm.data?.[key] === OPERATOR_SHIPPED_MIG_CONFIG) return;
    store.put('configmaps', { ...cm, data: { [key]: OPERATOR_SHIPPED_MIG_CONFIG } });
  }

  /** A new mig-manager pod on a node that had one: it starts, and applies the node's config. */
  private observePod(e: StoreEvent): void {
    const p = e.object as {
      metadata: { uid?: string; namespace?: string; labels?: Record<string, string> };
      spec?: { nodeName?: string };
    };
    const node = p.spec?.nodeName;
    const uid = p.metadata.uid;
    if (e.type === 'DELETED' || !node || !uid || p.metadata.namespace !== MIG_MANAGER_POD.namespace) return;
    if (!Object.entries(MIG_MANAGER_POD.labels).every(([k, v]) => p.metadata.labels?.[k] === v)) return;
    const before = this.pods.get(node);
    this.pods.set(node, uid);
    if (before !== undefined && before !== uid) this.started.add(node);
  }

  /** Writes due state changes; returns nothing, every change goes through the store. */
  settle(store: Store, now: number): void {
    if (this.reconcile) this.reconcileOperator(store);
    // Its informer's first sight of the Node: whatever the label names (no label: it waits).
    for (const name of this.started) {
      const config = store.node(name)?.metadata.labels?.[CONFIG];
      if (config) this.work.set(name, { config });
    }
    this.started.clear();
    for (const [name, lag] of [...this.lagged]) {
      const node = store.node(name);
      if (lag.due > now && node) continue;
      this.lagged.delete(name);
      if (node) store.put('nodes', withMigResources(node, lag.resources));
    }
    for (const [name, job] of [...this.work]) {
      const node = store.node(name);
      if (!node || node.metadata.labels?.[CONFIG] !== job.config) {
        if (!node) this.work.delete(name);
        continue;
      }
      // Down on this node: nothing answers the label (no `pending`, no `success`) until its pod runs.
      if (job.due === undefined && !runsOn(store, name)) continue;
      if (job.due === undefined) {
        job.due = now + this.reconfigureSeconds * 1000;
        store.put('nodes', withLabels(node, { [STATE]: 'pending' }));
        continue;
      }
      if (job.due > now) continue;
      this.work.delete(name);
      const layout = this.layouts[job.config];
      const at = new Date(now).toISOString();
      const lag = this.allocatableLagSeconds > 0;
      const later = (resources: Record<string, string | number>) => {
        if (lag) this.lagged.set(name, { due: now + this.allocatableLagSeconds * 1000, resources });
      };
      if (layout) {
        store.put('nodes', applyLayout(node, layout, at, lag));
        later(layout);
        continue;
      }
      // Not a fleet layout: the mig-parted config in its ConfigMap, as the real mig-manager reads it.
      const parted = partedLayout(store, this.configMap, job.config, node);
      store.put(
        'nodes',
        parted
          ? withGpuLayouts(applyLayout(node, parted.resources, at, lag), parted.perGpu)
          : withLabels(node, { [STATE]: 'failed' }),
      );
      if (parted) later(parted.resources);
    }
  }
}

/** GPU labels as the operator's node watch means them (hasGPULabels: GPU Feature Discovery's or NFD's PCI label). */
function hasGpuLabels(labels: Record<string, string> | undefined): boolean {
  return Object.keys(labels ?? {}).some(
    (k) =>
      k === 'nvidia.com/gpu.present' ||
      k === 'nvidia.com/gpu.product' ||
      k.startsWith('feature.node.kubernetes.io/pci-10de'),
  );
}

/**
 * Whether mig-manager runs on the node. Under the GPU Operator it is the `nvidia-mig-manager`
 * DaemonSet, which the operator schedules only where `nvidia.com/gpu.deploy.mig-manager` is `true`
 * (NVIDIA/gpu-operator assets/state-mig-manager/0600_daemonset.yaml nodeSelector); a node without its
 * Running pod has no mig-manager, and the label is answered by nobody (issue #30's "mig-manager down").
 * A fleet that declares no such DaemonSet is taken to run it everywhere, as before.
 */
function runsOn(store: Store, node: string): boolean {
  const { namespace, labels } = MIG_MANAGER_POD;
  const matches = (l: Record<string, string> | undefined) => Object.entries(labels).every(([k, v]) => l?.[k] === v);
  const declared = store
    .list('daemonsets.apps', namespace)
    .some((d) =>
      matches(
        (d.spec as { template?: { metadata?: { labels?: Record<string, string> } } } | undefined)?.template?.metadata
          ?.labels,
      ),
    );
  if (!declared) return true;
  return store
    .podsOnNode(node)
    .some(
      (p) =>
        p.metadata.namespace === namespace &&
        matches(p.metadata.labels) &&
        p.status?.phase === 'Running' &&
        !p.metadata.deletionTimestamp,
    );
}

function withLabels(node: Node, labels: Record<string, string>): Node {
  return { ...node, metadata: { ...node.metadata, labels: { ...node.metadata.labels, ...labels } } };
}

/** The node's `nvidia.com/mig-*` capacity and allocatable replaced with `layout`'s (what the kubelet reports). */
function withMigResources(node: Node, layout: Record<string, string | number>): Node {
  const swap = (list: Record<string, string | number> | undefined) => {
    const out: Record<string, string | number> = {};
    for (const [k, v] of Object.entries(list ?? {})) if (!MIG_RESOURCE.test(k)) out[k] = v;
    for (const [k, v] of Object.entries(layout)) out[k] = String(v);
    return out;
  };
  return {
    ...node,
    status: { ...node.status, capacity: swap(node.status?.capacity), allocatable: swap(node.status?.allocatable) },
  };
}

/**
 * `layout` applied: GFD's count labels, `success`, the applied stamp, and the resources — at once, or with
 * `lagged` all `nvidia.com/mig-*` at 0 (the device plugin restarting; the kubelet reports its devices later).
 */
function applyLayout(node: Node, layout: Record<string, string | number>, at: string, lagged = false): Node {
  const labels: Record<string, string> = {};
  for (const [k, v] of Object.entries(node.metadata.labels ?? {})) if (!MIG_COUNT_LABEL.test(k)) labels[k] = v;
  for (const [k, v] of Object.entries(layout)) {
    const m = MIG_RESOURCE.exec(k);
    if (m) labels[`nvidia.com/mig-${m[1]}.count`] = String(parseQuantity(v));
  }
  labels[STATE] = 'success';
  const annotations = { ...node.metadata.annotations };
  delete annotations[SIM_GPU_LAYOUT_ANNOTATION];
  annotations[SIM_MIG_APPLIED_ANNOTATION] = at;
  const resources = lagged ? Object.fromEntries(Object.keys(layout).map((k) => [k, 0])) : layout;
  return withMigResources({ ...node, metadata: { ...node.metadata, labels, annotations } }, resources);
}

/** The simulator's own record of each GPU's layout after a per-device config (node-gpus.ts reads it). */
export const SIM_GPU_LAYOUT_ANNOTATION = 'sim.gpu-reflex.io/mig-layout';

function withGpuLayouts(node: Node, perGpu: string[][]): Node {
  return {
    ...node,
    metadata: {
      ...node.metadata,
      annotations: { ...node.metadata.annotations, [SIM_GPU_LAYOUT_ANNOTATION]: JSON.stringify(perGpu) },
    },
  };
}
