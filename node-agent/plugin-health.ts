/**
 * The device plugin's health as the node agent sees it (issue #32): NVML's GPUs against what the node
 * advertises. The field notes' most common "GPU not visible" case is a dead or misconfigured device
 * plugin: NVML sees 8 GPUs, the node advertises none, and nothing says so. Run at every actuator tick
 * (it reads the Node there anyway), so a dead plugin is noticed within one tick.
 *
 * What a node should advertise, per mode:
 * - NVIDIA's plugin, whole GPUs: `nvidia.com/gpu` = GPUs × `nvidia.com/gpu.replicas` (time-slicing or MPS,
 *   the labeller's replicas per GPU; 1 without sharing), under `nvidia.com/gpu.shared` when renamed
 *   (NVIDIA/k8s-device-plugin api/config/v1/replicas.go, internal/lm/resource.go).
 * - With MIG: every `nvidia.com/` GPU resource summed (whole GPUs, `nvidia.com/mig-*`, or `nvidia.com/gpu`
 *   counting MIG devices under the single strategy) = whole GPUs × replicas + MIG devices.
 * - ACK's gpushare plugin (`aliyun.com/gpu-count` in capacity, or a sharing `ack.node.gpu.schedule`):
 *   `aliyun.com/gpu-count` = cards, and `aliyun.com/gpu-mem` at least one GiB per card
 *   (AliyunContainerService/gpushare-device-plugin pkg/gpu/nvidia: it patches gpu-count into capacity).
 *
 * Two ways to be wrong: fewer devices in **capacity** than expected (the plugin enumerates fewer, or the
 * kubelet dropped a dead plugin's resource: pkg/kubelet/cm/devicemanager/types.go endpointStopGracePeriod,
 * 5 min after its endpoint stopped), or **none allocatable** (a plugin whose endpoint stopped has every
 * device marked unhealthy at once). A fence takes some devices out of allocatable, never all of them
 * and never capacity; `remediate` still checks its own fences before restarting anything.
 *
 * An unreadable Node is unknown, never healthy: the state stays as it was.
 */
import { readdir, open } from 'node:fs/promises';
import { join } from 'node:path';
import type { CoreV1Api } from '@kubernetes/client-node';
import {
  DEVICE_PLUGIN_MISMATCH,
  DEVICE_PLUGIN_TAINT_KEY,
  type DevicePluginMismatchDetail,
  type DevicePluginMode,
} from '../events/catalog/device-plugin.ts';
import { SCHEMA_VERSION, SOURCES } from '../events/common.ts';
import { validateDetail } from '../events/validate.ts';
import type { Inventory } from './collectors/inventory.ts';
import type { OutgoingEvent } from './events.ts';

/** The Node as the check reads it. */
export interface NodeView {
  labels: Readonly<Record<string, string>>;
  capacity: Readonly<Record<string, string>>;
  allocatable: Readonly<Record<string, string>>;
  /** The keys of the Node's taints (absent: not read, as if none). */
  taints?: readonly string[];
}

/** What NVML answers for: whole GPUs (MIG off), MIG devices, and GPUs in all. */
export interface GpuView {
  gpus: number;
  whole: number;
  migDevices: number;
}

export function gpuViewOf(inv: Pick<Inventory, 'gpus'>): GpuView {
  const mig = inv.gpus.filter((g) => g.migMode === 'enabled');
  return {
    gpus: inv.gpus.length,
    whole: inv.gpus.length - mig.length,
    migDevices: mig.reduce((n, g) => n + g.migDevices.length, 0),
  };
}

type Resource = DevicePluginMismatchDetail['resources'][number];

/** ACK's sharing modes (`default` is exclusive): alibabacloud.com/help/doc-detail/191140.html. */
const CGPU_SCHEDULE = new Set(['cgpu', 'core_mem', 'share', 'mps']);
const GPU_RESOURCE = /^nvidia\.com\/(gpu|gpu\.shared|mig-.+)$/;

const num = (v: string | undefined) => {
  const n = Number(v);
  return Number.isFinite(n) && n > 0 ? Math.floor(n) : 0;
};

/** The mode the node's labels and capacity say, and what each advertised resource should hold. */
export function expectedAdvertised(g: GpuView, node: NodeView): { mode: DevicePluginMode; resources: Resource[] } {
  const { capacity: cap, allocatable: alloc, labels } = node;
  if (cap['aliyun.com/gpu-count'] !== undefined || CGPU_SCHEDULE.has(labels['ack.node.gpu.schedule'] ?? '')) {
    const r = (resource: string): Resource => ({
      resource,
      expected: g.gpus,
      capacity: num(cap[resource]),
      allocatable: num(alloc[resource]),
    });
    return { mode: 'cgpu', resources: [r('aliyun.com/gpu-count'), r('aliyun.com/gpu-mem')] };
  }
  const replicas = Math.max(1, num(labels['nvidia.com/gpu.replicas']));
  const strategy = labels['nvidia.com/gpu.sharing-strategy'];
  const renamed = cap['nvidia.com/gpu.shared'] !== undefined;
  const shared: DevicePluginMode | undefined =
    strategy === 'mps' ? 'mps' : strategy === 'time-slicing' || renamed ? 'time-slicing' : undefined;
  if (g.migDevices > 0) {
    const sum = (m: Readonly<Record<string, string>>) =>
      Object.entries(m).reduce((n, [k, v]) => n + (GPU_RESOURCE.test(k) ? num(v) : 0), 0);
    return {
      mode: 'mig',
      resources: [
        {
          resource: 'nvidia.com/*',
          expected: g.whole * replicas + g.migDevices,
          capacity: sum(cap),
          allocatable: sum(alloc),
        },
      ],
    };
  }
  const resource = renamed ? 'nvidia.com/gpu.shared' : 'nvidia.com/gpu';
  return {
    mode: shared ?? 'exclusive',
    resources: [
      {
        resource,
        expected: g.whole * (shared ? replicas : 1),
        capacity: num(cap[resource]),
        allocatable: num(alloc[resource]),
      },
    ],
  };
}

export type Verdict = { ok: true } | { ok: false; kind: 'capacity' | 'none-allocatable'; words: string };

/** Whether the node advertises what NVML's GPUs give (see the file's comment for the two ways it does not). */
export function judge(g: GpuView, resources: readonly Resource[]): Verdict {
  const short = resources.filter((r) => r.capacity < r.expected);
  const seen = `NVML sees ${g.gpus} GPU(s)`;
  if (short.length > 0)
    return {
      ok: false,
      kind: 'capacity',
      words: `${seen}; the node advertises ${short
        .map((r) => `${r.capacity} ${r.resource} (expected ${r.expected})`)
        .join(', ')}: the device plugin enumerates fewer devices than the node has, or is gone`,
    };
  const none = resources.filter((r) => r.expected > 0 && r.allocatable === 0);
  if (none.length > 0)
    return {
      ok: false,
      kind: 'none-allocatable',
      words: `${seen}; the node advertises ${none
        .map((r) => `${r.capacity} ${r.resource}`)
        .join(', ')} but none allocatable: the device plugin is down or unregistered`,
    };
  return { ok: true };
}

/**
 * The plugin's log lines worth showing a person, by what they mean. Matched case-insensitively.
 * - `could not load NVML library`: the plugin's container has no driver library (go-nvlib
 *   pkg/nvlib/info HasNvml; the NVIDIA runtime or CDI not set up for it).
 * - `unresolvable CDI devices`: a CDI device the plugin named has no spec on the node
 *   (container-device-interface pkg/cdi, as the runtime reports it: "failed to inject CDI devices").
 */
export const KNOWN_PLUGIN_ERRORS: readonly RegExp[] = [/could not load NVML library/i, /unresolvable CDI devices/i];

/** How much of each log file's end is read. */
const LOG_TAIL_BYTES = 64 * 1024;

/**
 * The known error lines in the newest logs of the plugin's pods (`<podLogDir>/<prefix>*` directories,
 * `<container>/<n>.log` in each: the kubelet's layout, `<namespace>_<pod>_<uid>`). Unreadable: none.
 */
export async function pluginErrorLines(podLogDir: string, prefix: string): Promise<string[]> {
  const found: string[] = [];
  try {
    const pods = (await readdir(podLogDir)).filter((d) => d.startsWith(prefix)).sort();
    for (const pod of pods) {
      for (const container of await readdir(join(podLogDir, pod)).catch(() => [] as string[])) {
        const dir = join(podLogDir, pod, container);
        for (const file of (await readdir(dir).catch(() => [] as string[])).filter((f) => f.endsWith('.log'))) {
          for (const line of (await tail(join(dir, file))).split('\n'))
            if (KNOWN_PLUGIN_ERRORS.some((re) => re.test(line))) found.push(criMessage(line).slice(0, 512));
        }
      }
    }
  } catch {
    return []; // no log directory here: nothing known
  }
  return [...new Set(found)].slice(-8);
}

/** The message of a CRI log line (`<time> <stream> <P|F> <message>`, the kubelet's pod log format), else the line. */
export function criMessage(line: string): string {
  const m = /^\S+ (?:stdout|stderr) [PF] (.*)$/.exec(line.trim());
  return (m ? m[1]! : line).trim();
}

async function tail(path: string): Promise<string> {
  const fh = await open(path, 'r').catch(() => undefined);
  if (!fh) return '';
  try {
    const { size } = await fh.stat();
    const len = Math.min(size, LOG_TAIL_BYTES);
    const buf = Buffer.alloc(len);
    await fh.read(buf, 0, len, size - len);
    return buf.toString('utf8');
  } finally {
    await fh.close();
  }
}

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
    const v = judge(g, resources);
    const repeatMs = this.o.repeatMs ?? PLUGIN_MISMATCH_REPEAT_MS;
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
          message: `NVML sees ${g.gpus} GPU(s) and the node advertises them again`,
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
