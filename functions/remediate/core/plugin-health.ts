/**
 * The device plugin's health as a reflex (issue #32): what to do about a `Device Plugin Mismatch` — the
 * node agent's NVML sees GPUs that the node does not advertise (node-agent/plugin-health.ts). Pure: facts in,
 * typed actions out.
 *
 *   firing, first time        → restart the plugin: its pod on the node is evicted, its DaemonSet makes a new
 *                               one that enumerates the GPUs afresh (the field notes' fix for "GPU not visible")
 *   firing, observed at least `fence.verifyMinutes` after that restart (evidence about the new pod, not the
 *   old one), or no plugin pod to restart → taint the node NoSchedule (`gpu-reflex.io/device-plugin`) and
 *                               tell a person, with the plugin's error lines
 *   resolved                  → lift that taint, forget the record (and say so when a person was told)
 *
 * Never restarted while NVIDIA's plugin latch fences a GPU of the node (backend `nvidia-plugin`): a new
 * plugin pod enumerates every GPU healthy again and would hand the faulty one out (fencing.md, corrections:
 * the restart is the only un-latch). Then: `held`, the taint and a person at once. The other backends
 * (the ACK file the plugin re-reads, DRA taints, the cGPU ConfigMap, a node taint) survive a restart.
 */
import { DEVICE_PLUGIN_TAINT_KEY, type DevicePluginMismatchDetail } from '../../../events/index.ts';
import type { NodeInfo } from '../../adapters/kube/model.ts';
import { emptyEdit, noActions, type Actions, type Notice } from '../../lib/plan.ts';
import { backendOf, fenced, pluginPods } from './fence.ts';
import { fenceBackendOf, poolOf, type Policy } from './policy.ts';
import { isOpen, type NodeState } from './state.ts';
import type { PodFacts } from './types.ts';

/** What the reflex remembers on the node: when the mismatch began, the restart, the taint. */
export const PLUGIN_RECORD_ANNOTATION = 'gpu-reflex.io/device-plugin';
/** The taint a node gets when its plugin stays wrong: no new pod lands where its GPUs cannot be handed out. */
export const PLUGIN_TAINT_KEY = DEVICE_PLUGIN_TAINT_KEY;

export interface PluginRecord {
  since: string;
  restartedAt?: string;
  taintedAt?: string;
}

/**
 * ACK's gpushare device plugin, where a node shares its cards through cGPU: DaemonSet
 * `kube-system/gpushare-device-plugin-ds`, pods labelled `name: gpushare-device-plugin-ds`
 * (AliyunContainerService/gpushare-device-plugin device-plugin-ds.yaml).
 */
export const GPUSHARE_PLUGIN = { namespace: 'kube-system', selector: { name: 'gpushare-device-plugin-ds' } };

export function readPluginRecord(annotations: Readonly<Record<string, string>>): PluginRecord | undefined {
  const raw = annotations[PLUGIN_RECORD_ANNOTATION];
  if (!raw) return undefined;
  try {
    const r = JSON.parse(raw) as Partial<PluginRecord>;
    return typeof r.since === 'string' ? (r as PluginRecord) : undefined;
  } catch {
    return undefined; // unreadable: as if none (the next firing starts over with a restart)
  }
}

export interface PluginHealthFacts {
  now: Date;
  event: DevicePluginMismatchDetail;
  node: Pick<NodeInfo, 'name' | 'annotations' | 'taints'> & Partial<Pick<NodeInfo, 'labels'>>;
  pods: readonly PodFacts[];
  state: Pick<NodeState, 'incidents'>;
}

export type PluginStep = 'restart' | 'taint' | 'untaint' | 'held' | 'none';

export interface PluginPlan {
  step: PluginStep;
  reason: string;
  /** The plugin pods evicted (`namespace/name`). */
  pods: string[];
  actions: Actions;
}

const MINUTE = 60_000;

/** The plugin's pods on the node: ACK's gpushare plugin on a cGPU node, NVIDIA's (fence.nvidiaPlugin) elsewhere. */
function pluginPodsFor(f: PluginHealthFacts, policy: Pick<Policy, 'fence'>): PodFacts[] {
  if (f.event.mode !== 'cgpu') return pluginPods(f.pods, policy);
  const { namespace, selector } = GPUSHARE_PLUGIN;
  return f.pods.filter(
    (p) => p.namespace === namespace && Object.entries(selector).every(([k, v]) => p.labels?.[k] === v),
  );
}

function words(e: DevicePluginMismatchDetail): string {
  const lines = e.pluginErrors?.length ? ` The plugin logs: ${e.pluginErrors.map((l) => `"${l}"`).join('; ')}.` : '';
  return `${e.message}.${lines}`;
}

/**
 * A node of a pool whose GPUs a DRA driver hands out (fence backend `dra`) that advertises no device-plugin
 * GPU at all: that is how a DRA node looks (its GPUs are ResourceSlice devices, no `nvidia.com/gpu`:
 * kubernetes.io DRA docs; fencing.md, corrections), not a dead plugin. Some advertised but fewer is still
 * a plugin's fault.
 */
function draNode(f: PluginHealthFacts, policy: Pick<Policy, 'fence' | 'pools' | 'poolLabels'>): boolean {
  return (
    fenceBackendOf(policy, poolOf(policy, f.node.labels ?? {})) === 'dra' &&
    f.event.mode !== 'cgpu' &&
    f.event.resources.every((r) => r.capacity === 0 && r.allocatable === 0)
  );
}

export function planPluginHealth(
  f: PluginHealthFacts,
  policy: Pick<Policy, 'fence' | 'pools' | 'poolLabels'>,
): PluginPlan {
  const { event: e, node } = f;
  const record = readPluginRecord(node.annotations);
  const at = f.now.toISOString();
  const tainted = node.taints.some((t) => t.key === PLUGIN_TAINT_KEY);
  const none: PluginPlan = { step: 'none', reason: '', pods: [], actions: noActions() };

  if (e.state === 'resolved') {
    if (!record && !tainted) return { ...none, reason: `${node.name}: the device plugin advertises the GPUs` };
    const reason = `NVML's GPUs are advertised again (${e.resources
      .map((r) => `${r.allocatable}/${r.expected} ${r.resource}`)
      .join(', ')})${tainted ? `: taint ${PLUGIN_TAINT_KEY} lifted` : ''}`;
    return {
      step: 'untaint',
      reason,
      pods: [],
      actions: {
        ...noActions(),
        nodeEdit: {
          ...emptyEdit(node.name),
          removeTaints: tainted ? [{ key: PLUGIN_TAINT_KEY, effect: 'NoSchedule' }] : [],
          annotations: { [PLUGIN_RECORD_ANNOTATION]: null },
        },
        notices: record?.taintedAt
          ? [{ title: `Device plugin back on ${node.name}`, text: reason, severity: 'info' }]
          : [],
        nodeEvents: tainted
          ? [{ type: 'Normal', reason: 'DevicePluginRecovered', action: 'Untaint', note: reason }]
          : [],
      },
    };
  }

  if (draNode(f, policy) && !tainted)
    return {
      ...none,
      reason: `${node.name}: a DRA driver hands out its GPUs (pool fence backend dra): no device plugin`,
    };
  // Firing. Already tainted: a person was told; nothing more until it resolves.
  if (tainted && record?.taintedAt) return { ...none, reason: `${node.name}: tainted since ${record.taintedAt}` };
  const since = record?.since ?? e.observedAt;
  const taint = (step: 'taint' | 'held', why: string): PluginPlan => {
    const reason =
      `${words(e)} ${why}: node tainted ${PLUGIN_TAINT_KEY}:NoSchedule (no new pod lands on it); ` +
      'a person must look at the device plugin';
    const notice: Notice = { title: `Device plugin wrong on ${node.name}`, text: reason, severity: 'critical' };
    return {
      step,
      reason,
      pods: [],
      actions: {
        ...noActions(),
        nodeEdit: {
          ...emptyEdit(node.name),
          addTaints: tainted ? [] : [{ key: PLUGIN_TAINT_KEY, value: e.kind ?? 'mismatch', effect: 'NoSchedule' }],
          annotations: { [PLUGIN_RECORD_ANNOTATION]: JSON.stringify({ ...record, since, taintedAt: at }) },
        },
        notices: [notice],
        nodeEvents: [{ type: 'Warning', reason: 'DevicePluginWrong', action: 'Taint', note: reason }],
      },
    };
  };

  if (record?.restartedAt) {
    // Evidence about the new pod: an event observed at least fence.verifyMinutes after the restart.
    const settled = Date.parse(e.observedAt) - Date.parse(record.restartedAt) >= policy.fence.verifyMinutes * MINUTE;
    if (!settled)
      return { ...none, reason: `${node.name}: the device plugin was restarted at ${record.restartedAt}; waiting` };
    return taint('taint', `still so ${policy.fence.verifyMinutes} min after its restart at ${record.restartedAt}`);
  }

  // A restart would lift NVIDIA's latch on a GPU gpu-reflex fences by it: held, a person decides.
  const latched = f.state.incidents.filter(
    (i) => isOpen(i) && fenced(i) && backendOf(i) === 'nvidia-plugin' && i.fence?.fallback === undefined,
  );
  if (latched.length > 0 && e.mode !== 'cgpu')
    return taint(
      'held',
      `not restarted: NVIDIA's device plugin fences ${latched.map((i) => i.gpu).join(', ')} by its latch, ` +
        'and a new plugin pod would hand it out again',
    );

  const pods = pluginPodsFor(f, policy);
  if (pods.length === 0) {
    const where =
      e.mode === 'cgpu'
        ? `${GPUSHARE_PLUGIN.namespace} (name=${GPUSHARE_PLUGIN.selector.name})`
        : `${policy.fence.nvidiaPlugin.namespace} (${Object.entries(policy.fence.nvidiaPlugin.selector)
            .map(([k, v]) => `${k}=${v}`)
            .join(',')})`;
    return taint('taint', `no device plugin pod runs on the node in ${where} to restart (check fence.nvidiaPlugin)`);
  }
  const names = pods.map((p) => `${p.namespace}/${p.name}`);
  const reason =
    `${words(e)} Restarting ${names.join(', ')} ` + '(its DaemonSet makes a new one, which enumerates the GPUs afresh)';
  return {
    step: 'restart',
    reason,
    pods: names,
    actions: {
      ...noActions(),
      nodeEdit: {
        ...emptyEdit(node.name),
        annotations: { [PLUGIN_RECORD_ANNOTATION]: JSON.stringify({ since, restartedAt: at }) },
      },
      evictions: pods.map((p) => ({ namespace: p.namespace, name: p.name, uid: p.uid })),
      nodeEvents: [{ type: 'Warning', reason: 'DevicePluginRestarted', action: 'Evict', note: reason }],
    },
  };
}
