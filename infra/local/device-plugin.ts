/**
 * The local stack's stand-in for the ACK GPU device plugin on every agent node: it reads the node's
 * unhealthy-devices file (`etc/nvidia-device-plugin/unhealthyDevices.json` under the node's
 * directory, where the node agent's actuator writes it) and reports what is left healthy as the
 * Node's allocatable, as the kubelet does from the plugin's ListAndWatch: a fenced whole GPU leaves
 * `nvidia.com/gpu`; a fenced MIG GPU takes every one of its instances out of its
 * `nvidia.com/mig-<profile>` count. So a fenced GPU really leaves the schedulable pool: a pod
 * asking for every GPU of the node no longer fits there. Capacity stays what the node has.
 */
import type { KubeSim } from './kube/index.ts';
import { fenceFilePath } from './agent-host.ts';
import type { NodeFiles } from './node-files.ts';
import type { GpuSpec } from './node-gpus.ts';
import { FenceFile } from '../../node-agent/actuator/fence-file.ts';

export interface PluginNode extends Pick<NodeFiles, 'node' | 'dir'> {
  gpus: readonly GpuSpec[];
}

/** What one GPU gives the node's allocatable: its MIG instances by profile, or one whole GPU. */
function devicesOf(g: GpuSpec): Map<string, number> {
  const out = new Map<string, number>();
  if (g.mig.length === 0) out.set('nvidia.com/gpu', 1);
  for (const m of g.mig) out.set(`nvidia.com/mig-${m.profile}`, (out.get(`nvidia.com/mig-${m.profile}`) ?? 0) + 1);
  return out;
}

export class DevicePluginStandIn {
  /** Each node's allocatable as the plugin first enumerated it (every device healthy). */
  private readonly base = new Map<string, Record<string, string>>();
  /** GPU indices each node's file listed at the last sync. */
  private readonly unhealthy = new Map<string, ReadonlySet<number>>();

  /** The GPUs the plugin reports unhealthy on `node` (as of the last sync): the kubelet hands them to no new pod. */
  fenced(node: string): ReadonlySet<number> {
    return this.unhealthy.get(node) ?? new Set();
  }

  constructor(
    private readonly sim: KubeSim,
    private readonly nodes: readonly PluginNode[],
  ) {}

  /** Re-reads every node's file; returns the nodes whose allocatable changed. */
  sync(): string[] {
    const changed: string[] = [];
    for (const f of this.nodes) {
      const node = this.sim.store.node(f.node);
      if (!node) continue;
      const status = (node.status ?? {}) as { allocatable?: Record<string, string> };
      if (!this.base.has(f.node)) this.base.set(f.node, { ...(status.allocatable ?? {}) });
      const base = this.base.get(f.node)!;
      const listed = new FenceFile(fenceFilePath(f)).read();
      const fenced = f.gpus.filter((g) => listed.uuid.includes(g.uuid) || listed.index.includes(String(g.index)));
      this.unhealthy.set(f.node, new Set(fenced.map((g) => g.index)));
      const want: Record<string, string> = { ...(status.allocatable ?? {}) };
      for (const key of new Set(f.gpus.flatMap((g) => [...devicesOf(g).keys()]))) {
        if (base[key] === undefined) continue;
        const out = fenced.reduce((n, g) => n + (devicesOf(g).get(key) ?? 0), 0);
        want[key] = String(Math.max(0, Number(base[key]) - out));
      }
      if (JSON.stringify(want) === JSON.stringify(status.allocatable ?? {})) continue;
      this.sim.store.put('nodes', { ...node, status: { ...status, allocatable: want } });
      changed.push(f.node);
    }
    return changed;
  }
}
