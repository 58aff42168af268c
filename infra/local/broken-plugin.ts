import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { KubeSim } from './kube/index.ts';
import type { Pod } from './kube/types.ts';
import type { NodeFiles } from './node-files.ts';
import { devicesOf, livePluginPod, type PluginNode, type PluginPods } from './device-plugin-node.ts';

/** The kubelet's grace before a stopped plugin's resource leaves capacity (devicemanager/types.go: 5 min). */
export const ENDPOINT_STOP_GRACE_MS = 5 * 60_000;

/** Where a node's kubelet keeps pod logs (`/var/log/pods` on the host), under the node's directory. */
export function pluginLogDir(f: Pick<NodeFiles, 'dir'>): string {
  return join(f.dir, 'var', 'log', 'pods');
}

/** A broken plugin on a node: since when, the pod that broke, what it logs, whether a new pod breaks too. */
interface Broken {
  since: number;
  pod: string | undefined;
  lines: readonly string[];
  persistent: boolean;
  /** The resources' capacity when it broke: what a working plugin enumerates again. */
  capacity: Record<string, string>;
}

/**
 * The device plugins that stopped serving (device-plugin.ts `breakPlugin`, issue #32): the kubelet marks every
 * device a broken plugin served unhealthy, and drops its resources from capacity after the grace.
 */
export class BrokenPlugins {
  /** Nodes whose plugin stopped serving (breakPlugin). */
  private readonly broken = new Map<string, Broken>();

  constructor(
    private readonly sim: KubeSim,
    private readonly nodes: readonly PluginNode[],
    private readonly pluginPods: PluginPods,
  ) {}

  /**
   * `node`'s plugin stops serving now (scripted adversity: scenario step `devicePlugin`), logging `lines`;
   * the next sync shows it in the Node. A new plugin pod serves again unless `persistent`.
   */
  break(node: string, lines: readonly string[], persistent: boolean): void {
    const f = this.nodes.find((x) => x.node === node);
    const n = this.sim.store.node(node);
    if (!f || !n) return;
    const status = (n.status ?? {}) as { capacity?: Record<string, string>; allocatable?: Record<string, string> };
    const had = this.broken.get(node)?.capacity ?? { ...(status.capacity ?? status.allocatable ?? {}) };
    const pod = livePluginPod(this.sim, this.pluginPods, node);
    this.broken.set(node, { since: this.sim.clock.now(), pod: pod?.metadata.uid, lines, persistent, capacity: had });
    if (pod) this.writeLog(f, pod, lines);
  }

  /** Whether `node`'s plugin is broken now (as of the last sync). */
  has(node: string): boolean {
    return this.broken.has(node);
  }

  /** The pod's log, where the kubelet writes it: `<ns>_<pod>_<uid>/<container>/0.log` (CRI format lines). */
  private writeLog(f: PluginNode, pod: Pod, lines: readonly string[]): void {
    const dir = join(pluginLogDir(f), `${pod.metadata.namespace}_${pod.metadata.name}_${pod.metadata.uid}`, 'plugin');
    mkdirSync(dir, { recursive: true });
    const at = new Date(this.sim.clock.now()).toISOString();
    writeFileSync(join(dir, '0.log'), lines.map((l) => `${at} stderr F ${l}\n`).join(''));
  }

  /**
   * A broken plugin's node as the kubelet shows it: every device of the plugin's resources unhealthy
   * (allocatable 0), and after ENDPOINT_STOP_GRACE_MS none in capacity either. Undefined: the plugin serves
   * (again: a new pod replaced the broken one, and the node's capacity is restored).
   */
  view(f: PluginNode, status: { capacity?: Record<string, string>; allocatable?: Record<string, string> }) {
    const b = this.broken.get(f.node);
    if (!b) return undefined;
    const pod = livePluginPod(this.sim, this.pluginPods, f.node);
    const keys = new Set(f.gpus.flatMap((g) => [...devicesOf(g, f.sharing).keys()]));
    if (pod && pod.metadata.uid !== b.pod) {
      if (!b.persistent) {
        this.broken.delete(f.node);
        const capacity = { ...(status.capacity ?? {}) };
        for (const k of keys) if (b.capacity[k] !== undefined) capacity[k] = b.capacity[k];
        return { restored: capacity };
      }
      b.pod = pod.metadata.uid;
      this.writeLog(f, pod, b.lines);
    }
    const zero = (m: Record<string, string> | undefined) => {
      const out = { ...(m ?? {}) };
      for (const k of keys) if (out[k] !== undefined) out[k] = '0';
      return out;
    };
    const dropped = this.sim.clock.now() - b.since >= ENDPOINT_STOP_GRACE_MS;
    return {
      status: {
        ...status,
        allocatable: zero(status.allocatable),
        ...(dropped ? { capacity: zero(status.capacity) } : {}),
      },
    };
  }
}
