/**
 * The device plugin's health as the node agent sees it (issue #32): NVML's GPUs against what the node
 * advertises. The field notes' most common "GPU not visible" case is a dead or misconfigured device
 * plugin: NVML sees 8 GPUs, the node advertises none, and nothing says so. Run at every actuator tick
 * (it reads the Node there anyway), so a dead plugin is noticed within one tick.
 *
 * What a node should advertise per mode, and the two ways to be wrong: plugin-advertised.ts; the plugin's
 * known error lines: plugin-logs.ts.
 *
 * An unreadable Node is unknown, never healthy: the state stays as it was.
 */
import type { CoreV1Api } from '@kubernetes/client-node';
import {
  DEVICE_PLUGIN_MISMATCH,
  DEVICE_PLUGIN_TAINT_KEY,
  type DevicePluginMismatchDetail,
} from '../events/catalog/device-plugin.ts';
import { SCHEMA_VERSION, SOURCES } from '../events/common.ts';
import { validateDetail } from '../events/validate.ts';
import type { Inventory } from './collectors/inventory.ts';
import type { OutgoingEvent } from './events.ts';
import { expectedAdvertised, gpuViewOf, judge, type NodeView, type Resource } from './plugin-advertised.ts';
import { advertisesNothing, draManaged, type SliceView } from './plugin-dra.ts';

export {
  expectedAdvertised,
  gpuViewOf,
  judge,
  type GpuView,
  type NodeView,
  type Verdict,
} from './plugin-advertised.ts';
export { criMessage, KNOWN_PLUGIN_ERRORS, pluginErrorLines } from './plugin-logs.ts';

/** The Node's labels, capacity and allocatable through the API (RBAC: nodes get, which the actuator has). */
export function kubeNodeView(core: Pick<CoreV1Api, 'readNode'>, name: string): () => Promise<NodeView> {
  return async () => {
    const n = await core.readNode({ name });
    return {
      labels: { ...(n.metadata?.labels ?? {}) },
      capacity: { ...(n.status?.capacity ?? {}) },
      allocatable: { ...(n.status?.allocatable ?? {}) },
      taints: (n.spec?.taints ?? []).map((t) => t.key),
    };
  };
}

/**
 * While the mismatch lasts, it is sent again this often (the functions escalate on a later one, and one
 * restarted or lost meanwhile acts on the next); while the functions' taint holds on a node that advertises
 * its GPUs again, the resolution is, until the taint is gone (the evidence that it was acted on).
 */
export const PLUGIN_MISMATCH_REPEAT_MS = 60_000;

export interface PluginHealthOptions {
  nodeName: string;
  readNode: () => Promise<NodeView>;
  /** The plugin's known error lines (pluginErrorLines); absent: not read. */
  errorLines?: () => Promise<string[]>;
  /** This node's ResourceSlices (plugin-dra.ts kubeNodeSlices); absent: a DRA node is not recognised. */
  readSlices?: () => Promise<SliceView[]>;
  /** The DRA drivers whose devices are GPUs (default plugin-dra.ts GPU_DRA_DRIVERS). */
  draDrivers?: readonly string[];
  repeatMs?: number;
  log?: (line: string) => void;
}

/**
 * The check, one tick at a time: a `Device Plugin Mismatch` when it starts, each `repeatMs` while it lasts,
 * and when it ends — then again each `repeatMs` while the node still holds `gpu-reflex.io/device-plugin`
 * (the `resolved` was lost, or this agent restarted and never saw the firing: the taint is the evidence).
 */
export class PluginHealthCheck {
  private firing = false;
  private sentAt = -Infinity;
  private readFailing = false;
  /** The last ResourceSlice reading (plugin-dra.ts): at most one list each `repeatMs`. */
  private dra?: { at: number; managed: boolean; failed?: boolean };

  constructor(private readonly o: PluginHealthOptions) {}

  async check(nowMs: number, inv: Pick<Inventory, 'gpus'> | undefined): Promise<OutgoingEvent[]> {
    // No inventory yet, or NVML sees no GPU: nothing to expect.
    if (!inv || inv.gpus.length === 0) return [];
    let node: NodeView;
    try {
      node = await this.o.readNode();
      if (this.readFailing) this.o.log?.('device plugin check: the Node is readable again');
      this.readFailing = false;
    } catch (err) {
      // Unknown: neither a mismatch nor its end.
      if (!this.readFailing) this.o.log?.(`device plugin check: Node not readable (${(err as Error).message})`);
      this.readFailing = true;
      return [];
    }
    const g = gpuViewOf(inv);
    const { mode, resources } = expectedAdvertised(g, node);
    const repeatMs = this.o.repeatMs ?? PLUGIN_MISMATCH_REPEAT_MS;
    const judged = judge(g, resources);
    // A DRA node advertises no device-plugin GPU by design: not a mismatch (plugin-dra.ts).
    const v = !judged.ok && (await this.offeredThroughDra(nowMs, repeatMs, resources)) ? { ok: true as const } : judged;
    if (v.ok) {
      const held = node.taints?.includes(DEVICE_PLUGIN_TAINT_KEY) ?? false;
      if (!this.firing && !(held && nowMs - this.sentAt >= repeatMs)) return [];
      this.firing = false;
      this.sentAt = nowMs;
      return [
        this.event(nowMs, {
          state: 'resolved',
          mode,
          gpus: g.gpus,
          resources,
          message: judged.ok
            ? `NVML sees ${g.gpus} GPU(s) and the node advertises them again`
            : `NVML sees ${g.gpus} GPU(s), offered through DRA: no device plugin resource is expected`,
        }),
      ];
    }
    if (this.firing && nowMs - this.sentAt < repeatMs) return [];
    this.firing = true;
    this.sentAt = nowMs;
    const lines = (await this.o.errorLines?.().catch(() => [])) ?? [];
    return [
      this.event(nowMs, {
        state: 'firing',
        mode,
        gpus: g.gpus,
        resources,
        kind: v.kind,
        message: v.words.slice(0, 1024),
        ...(lines.length > 0 ? { pluginErrors: lines } : {}),
      }),
    ];
  }

  /** Whether a GPU DRA driver offers this node's GPUs; slices not readable: unknown, so not (logged once). */
  private async offeredThroughDra(nowMs: number, repeatMs: number, resources: readonly Resource[]): Promise<boolean> {
    if (!this.o.readSlices || !advertisesNothing(resources)) return false;
    if (this.dra && nowMs - this.dra.at < repeatMs) return this.dra.managed;
    const was = this.dra;
    let managed = false;
    try {
      managed = draManaged(resources, await this.o.readSlices(), this.o.draDrivers);
      if (managed && !was?.managed) this.o.log?.('device plugin check: GPUs offered through DRA, no plugin expected');
      this.dra = { at: nowMs, managed };
    } catch (err) {
      if (!was?.failed) this.o.log?.(`device plugin check: ResourceSlices not readable (${(err as Error).message})`);
      this.dra = { at: nowMs, managed, failed: true };
    }
    return managed;
  }

  private event(
    at: number,
    d: Omit<DevicePluginMismatchDetail, 'schemaVersion' | 'eventId' | 'node' | 'observedAt'>,
  ): OutgoingEvent {
    const detail = {
      schemaVersion: SCHEMA_VERSION,
      eventId: `plugin:${this.o.nodeName}:${d.state}:${at}`,
      node: this.o.nodeName,
      observedAt: new Date(at).toISOString(),
      ...d,
    };
    const r = validateDetail(DEVICE_PLUGIN_MISMATCH, detail);
    if (!r.ok) throw new Error(`invalid Device Plugin Mismatch: ${r.problems.map((p) => p.message).join('; ')}`);
    return {
      source: SOURCES.agent,
      detailType: DEVICE_PLUGIN_MISMATCH,
      detail,
      time: new Date(at),
      priority: 'critical',
    };
  }
}
