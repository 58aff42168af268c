/**
 * The local stack's stand-in for the GPU device plugin on every agent node, reporting what it
 * counts healthy as the Node's allocatable, as the kubelet does from the plugin's ListAndWatch: a
 * GPU held out leaves `nvidia.com/gpu`; a MIG GPU held out takes every one of its instances out of
 * its `nvidia.com/mig-<profile>` count. Capacity stays what the node has. Two plugins, per node:
 *
 * - `ack` — Alibaba Cloud's ACK device plugin: the GPUs listed in the node's unhealthy-devices file
 *   (`etc/nvidia-device-plugin/unhealthyDevices.json` under the node's directory, where the node
 *   agent's actuator writes it) are held out; removing an entry returns the GPU.
 * - `nvidia` — NVIDIA's k8s-device-plugin: it watches the GPUs' XIDs itself, marks a GPU unhealthy
 *   on every XID not on its skip list, and never marks it healthy again until the plugin restarts
 *   (its latch); on a MIG GPU only one of its instances (health is keyed by the parent GPU). Here: a
 *   GPU latches when an XID is injected into it (`onXid`), and the latch is undone when the plugin's
 *   pod on the node is replaced by a new one (its DaemonSet recreates it after an eviction), which
 *   enumerates the GPUs afresh. It reads no file.
 * - `dra` — a DRA driver (NVIDIA's publishes driver `gpu.nvidia.com`, pool = the node): it
 *   publishes one ResourceSlice per node listing each whole GPU as `gpu-<index>` with its `uuid`
 *   attribute (dra-slice.ts); a GPU whose device a DeviceTaintRule (NoSchedule or NoExecute) selects is
 *   held out. A DRA node advertises no `nvidia.com/gpu`: the simulated scheduler allocates its devices
 *   to ResourceClaims (kube/dra-allocator.ts), skipping tainted ones; here the taint only keeps the
 *   kubelet's view (PodResources' allocatable, NVML processes) in step.
 *
 * Shared GPUs (issue #32, plugin-sharing.ts): where NVIDIA's plugin config time-slices or MPS-shares a
 * node's GPUs, each GPU gives `replicas` devices of the shared resource, the labeller's labels are
 * written once, and NVIDIA's latch takes every replica of the card out (one, before its #1929 fix).
 *
 * A plugin can break (`breakPlugin`, issue #32): its endpoint stops, so the kubelet marks every device it
 * served unhealthy (allocatable 0 at once) and drops the resource from capacity once
 * `endpointStopGracePeriod` (5 min) has passed (kubernetes/kubernetes pkg/kubelet/cm/devicemanager/types.go,
 * manager.go GetCapacity); the plugin's pod log gets its error lines, where the kubelet keeps pod logs. A new
 * plugin pod on the node (the DaemonSet's, after the old one was deleted) enumerates the GPUs and serves
 * again — unless the cause is the node's (a missing driver library, a stale CDI spec: `persistent`), when
 * the new pod fails the same way.
 *
 * So a fenced GPU really leaves the schedulable pool: a pod asking for every GPU of the node no
 * longer fits there.
 */
import type { KubeSim } from './kube/index.ts';
import { fenceFilePath, readUnhealthyDevices } from './ack-fence-file.ts';
import type { GpuSpec } from './node-gpus.ts';
import { advertised } from './plugin-sharing.ts';
import { gpuResourceSlice } from './dra-slice.ts';
import { BrokenPlugins } from './broken-plugin.ts';
import {
  devicesOf,
  livePluginPod,
  PLUGIN_SKIPPED_XIDS,
  type DevicePluginKind,
  type PluginNode,
  type PluginPods,
} from './device-plugin-node.ts';

export { ENDPOINT_STOP_GRACE_MS, pluginLogDir } from './broken-plugin.ts';
export type { DevicePluginKind, PluginNode, PluginPods } from './device-plugin-node.ts';

const SLICES = 'resourceslices.resource.k8s.io';
const RULES = 'devicetaintrules.resource.k8s.io';

export class DevicePluginStandIn {
  /** Each node's allocatable as the plugin first enumerated it (every device healthy). */
  private readonly base = new Map<string, Record<string, string>>();
  /** GPU indices each node's plugin held out at the last sync. */
  private readonly unhealthy = new Map<string, ReadonlySet<number>>();
  /** The devices each node's plugin held out at the last sync, per GPU (for PodResources' allocatable). */
  private readonly out = new Map<string, { gpu: number; devices: ReadonlyMap<string, number> }[]>();
  /** GPU indices per node that did not come back from a reboot: no plugin enumerates them any more. */
  private readonly gone = new Map<string, Set<number>>();
  /** Shared cards with only some replicas out, per node (GPU index → replicas out). */
  private readonly partial = new Map<string, Map<number, number>>();
  /** Nodes whose sharing labels and capacity the plugin has written. */
  private readonly advertised = new Set<string>();
  /** NVIDIA plugin: GPU indices latched per node, and the uid of the plugin pod that latched them. */
  private readonly latched = new Map<string, { gpus: Set<number>; pod: string | undefined }>();
  /** Nodes whose plugin stopped serving (breakPlugin). */
  private readonly broken: BrokenPlugins;

  constructor(
    private readonly sim: KubeSim,
    private readonly nodes: readonly PluginNode[],
    private readonly pluginPods: PluginPods = {
      namespace: 'kube-system',
      selector: { name: 'nvidia-device-plugin-ds' },
    },
    /** The DRA driver name the `dra` nodes' slices carry (the policy's `fence.dra.driver`). */
    private readonly draDriver = 'gpu.nvidia.com',
  ) {
    this.broken = new BrokenPlugins(sim, nodes, pluginPods);
  }

  /** The `dra` node's ResourceSlice, published once (as the driver's kubelet plugin does at start). */
  private publishSlice(f: PluginNode): void {
    const slice = gpuResourceSlice(f.node, this.draDriver, f.gpus, new Date(this.sim.clock.now()).toISOString());
    if (this.sim.store.get(SLICES, '', slice.metadata.name)) return;
    this.sim.store.put(SLICES, slice);
  }

  /** The GPUs of a `dra` node whose device a DeviceTaintRule with an effect selects. */
  private tainted(f: PluginNode): GpuSpec[] {
    const rules = this.sim.store
      .list(RULES)
      .map(
        (r) =>
          r.spec as
            | { deviceSelector?: { driver?: string; pool?: string; device?: string }; taint?: { effect?: string } }
            | undefined,
      );
    const selects = (g: GpuSpec) =>
      rules.some((r) => {
        const sel = r?.deviceSelector;
        if (!sel || (r?.taint?.effect !== 'NoSchedule' && r?.taint?.effect !== 'NoExecute')) return false;
        return (
          (sel.driver === undefined || sel.driver === this.draDriver) &&
          (sel.pool === undefined || sel.pool === f.node) &&
          (sel.device === undefined || sel.device === `gpu-${g.index}`)
        );
      });
    return f.gpus.filter(selects);
  }

  /** The GPUs the plugin reports unhealthy on `node` (as of the last sync): the kubelet hands them to no new pod. */
  fenced(node: string): ReadonlySet<number> {
    return this.unhealthy.get(node) ?? new Set();
  }

  /** A shared card's replicas held out per GPU index, as of the last sync (the rest are still handed out). */
  replicasOut(node: string): ReadonlyMap<number, number> {
    return this.partial.get(node) ?? new Map();
  }

  /**
   * What the plugin advertises once it has read its sharing config: its labeller's labels, and the
   * shared resource's capacity (GPUs × replicas; a renamed resource replaces `nvidia.com/gpu`).
   */
  private advertise(f: PluginNode): void {
    const node = this.sim.store.node(f.node);
    if (!f.sharing || !node || this.advertised.has(f.node)) return;
    this.advertised.add(f.node);
    this.sim.store.put('nodes', advertised(node, f.sharing, f.gpus.filter((g) => g.mig.length === 0).length));
  }

  /**
   * What `node`'s plugin does not advertise healthy now (as of the last sync): per GPU held out, how
   * many devices of each resource, and the GPUs it no longer enumerates. The simulated kubelet's
   * PodResources GetAllocatableResources leaves these out (infra/local/pod-resources/node-state.ts).
   */
  notAdvertised(node: string): { held: { gpu: number; devices: ReadonlyMap<string, number> }[]; gone: Set<number> } {
    return { held: this.out.get(node) ?? [], gone: new Set(this.gone.get(node) ?? []) };
  }

  /**
   * GPU `index` of `node` did not come back from its reboot (scripted adversity, stack.ts): it is off
   * the bus, so the plugin that enumerates the GPUs afresh at the kubelet's start no longer lists it
   * and the kubelet's capacity drops by its devices (Kubernetes device plugins: capacity is what the
   * plugin's ListAndWatch reports). A fence entry for it holds out nothing more.
   */
  lose(node: string, index: number): void {
    const f = this.nodes.find((x) => x.node === node);
    const g = f?.gpus.find((x) => x.index === index);
    const set = this.gone.get(node) ?? new Set<number>();
    if (!f || !g || set.has(index)) return;
    set.add(index);
    this.gone.set(node, set);
    const n = this.sim.store.node(node);
    if (!n) return;
    const status = (n.status ?? {}) as { allocatable?: Record<string, string>; capacity?: Record<string, string> };
    const less = (m: Record<string, string> | undefined) => {
      if (!m) return m;
      const out = { ...m };
      for (const [key, k] of devicesOf(g, f.sharing))
        if (out[key] !== undefined) out[key] = String(Math.max(0, Number(out[key]) - k));
      return out;
    };
    const base = this.base.get(node);
    if (base) this.base.set(node, less(base)!);
    this.sim.store.put('nodes', {
      ...n,
      status: {
        ...status,
        ...(status.capacity ? { capacity: less(status.capacity) } : {}),
        ...(status.allocatable ? { allocatable: less(status.allocatable) } : {}),
      },
    });
  }

  /** An XID reached GPU `index` of `node` (NVIDIA's plugin sees it through NVML, as the agent does). */
  onXid(node: string, index: number, xid: number): void {
    const n = this.nodes.find((x) => x.node === node);
    if (n?.kind !== 'nvidia' || PLUGIN_SKIPPED_XIDS.has(xid)) return;
    const l = this.latched.get(node) ?? { gpus: new Set<number>(), pod: this.pluginPod(node) };
    l.gpus.add(index);
    this.latched.set(node, l);
  }

  /** The uid of the live NVIDIA device plugin pod on `node`, if one runs there. */
  private pluginPod(node: string): string | undefined {
    return livePluginPod(this.sim, this.pluginPods, node)?.metadata.uid;
  }

  /**
   * `node`'s plugin stops serving now (scripted adversity: scenario step `devicePlugin`), logging `lines`;
   * the next sync shows it in the Node. A new plugin pod serves again unless `persistent`.
   */
  breakPlugin(node: string, lines: readonly string[], persistent: boolean): void {
    this.broken.break(node, lines, persistent);
  }

  /** Whether `node`'s plugin is broken now (as of the last sync). */
  isBroken(node: string): boolean {
    return this.broken.has(node);
  }

  /** The devices `f`'s plugin holds out now, per GPU (every device of the GPU, or only some). */
  private heldOut(f: PluginNode): { gpu: GpuSpec; devices: Map<string, number> }[] {
    const whole = (gs: GpuSpec[]) => gs.map((g) => ({ gpu: g, devices: devicesOf(g, f.sharing) }));
    if (f.kind === 'dra') {
      this.publishSlice(f);
      return whole(this.tainted(f));
    }
    if (f.kind === 'ack') {
      const listed = readUnhealthyDevices(fenceFilePath(f));
      return whole(f.gpus.filter((g) => listed.uuid.includes(g.uuid) || listed.index.includes(String(g.index))));
    }
    const l = this.latched.get(f.node);
    if (!l) return [];
    // A new plugin pod enumerated the GPUs afresh: the latch is gone.
    const pod = this.pluginPod(f.node);
    if (pod !== undefined && pod !== l.pod) {
      this.latched.delete(f.node);
      return [];
    }
    // With MIG, NVIDIA's plugin keys health by the parent GPU's UUID, so a whole-GPU XID marks one MIG
    // device of that GPU unhealthy and its other instances stay allocatable (k8s-device-plugin
    // internal/rm/health.go; fencing.md, corrections 2026-12-01).
    // A shared card: since PR #1930 every replica goes; the plugin before it (#1929) kept one device
    // per parent UUID and marks one replica (internal/rm/health.go@1b826acc; plugin-sharing.ts).
    const latch = (g: GpuSpec): Map<string, number> =>
      g.mig.length > 0
        ? new Map([[`nvidia.com/mig-${g.mig[0]!.profile}`, 1]])
        : f.sharing?.preFix1929
          ? new Map([[f.sharing.resource, 1]])
          : devicesOf(g, f.sharing);
    return f.gpus.filter((g) => l.gpus.has(g.index)).map((g) => ({ gpu: g, devices: latch(g) }));
  }

  /**
   * Re-reads every node's plugin state (only nodes of `kind` when given); returns the nodes whose
   * allocatable changed.
   */
  sync(kind?: DevicePluginKind): string[] {
    const changed: string[] = [];
    for (const f of this.nodes) {
      if (kind && f.kind !== kind) continue;
      this.advertise(f);
      const node = this.sim.store.node(f.node);
      if (!node) continue;
      let status = (node.status ?? {}) as { allocatable?: Record<string, string>; capacity?: Record<string, string> };
      const broken = this.broken.view(f, status);
      if (broken?.status) {
        if (JSON.stringify(broken.status) === JSON.stringify(status)) continue;
        this.sim.store.put('nodes', { ...node, status: broken.status });
        changed.push(f.node);
        continue;
      }
      if (broken?.restored) status = { ...status, capacity: broken.restored };
      if (!this.base.has(f.node)) this.base.set(f.node, { ...(status.allocatable ?? {}) });
      // What the plugin enumerates is the node's capacity (mig-manager changes it with a relayout);
      // a node that reports none keeps what the plugin first saw.
      const base = status.capacity ?? this.base.get(f.node)!;
      const gone = this.gone.get(f.node);
      const fenced = this.heldOut(f).filter((x) => !gone?.has(x.gpu.index));
      this.out.set(
        f.node,
        fenced.map((x) => ({ gpu: x.gpu.index, devices: x.devices })),
      );
      // The kubelet hands no new pod a GPU all of whose devices are out; a GPU with only some out
      // still takes pods on the others (the partial MIG latch).
      const total = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);
      const all = (g: GpuSpec) => total(devicesOf(g, f.sharing));
      this.unhealthy.set(f.node, new Set(fenced.filter((x) => total(x.devices) >= all(x.gpu)).map((x) => x.gpu.index)));
      this.partial.set(
        f.node,
        new Map(fenced.filter((x) => total(x.devices) < all(x.gpu)).map((x) => [x.gpu.index, total(x.devices)])),
      );
      const want: Record<string, string> = { ...(status.allocatable ?? {}) };
      for (const key of new Set(f.gpus.flatMap((g) => [...devicesOf(g, f.sharing).keys()]))) {
        if (base[key] === undefined) continue;
        const out = fenced.reduce((n, x) => n + (x.devices.get(key) ?? 0), 0);
        want[key] = String(Math.max(0, Number(base[key]) - out));
      }
      if (!broken?.restored && JSON.stringify(want) === JSON.stringify(status.allocatable ?? {})) continue;
      this.sim.store.put('nodes', { ...node, status: { ...status, allocatable: want } });
      changed.push(f.node);
    }
    return changed;
  }
}
