/**
 * Reasons in words a person on call understands: what happened, what it means, why this action,
 * what comes next. They end up in the Remediation event, the chat message and the node history.
 */
import {
  decodeNvlink5,
  decodeWords,
  describeXid,
  type DeviceHolder,
  type GpuXidErrorDetail,
  type NvidiaBucket,
  type RemediationAction,
} from '../../../events/index.ts';
import { gpuWords, type ClaimMove, type FaultSite } from './scope.ts';
import type { Capabilities, TriggerEvent } from './types.ts';
import type { Recovery } from './recovery.ts';

export { fenceEventNote, fenceWords, resetSkippedWords } from './fence-words.ts';
export { mpsBlameWords, tenantPodNote, tenantWords, unknownTenantWords } from './tenant-words.ts';

const BUCKET_WORDS: Record<NvidiaBucket, string> = {
  IGNORE: 'NVIDIA says no action is needed',
  RESTART_APP: 'NVIDIA says restart the application',
  RESET_GPU: 'NVIDIA says reset the GPU (reboot if it persists, replace if it persists after that)',
  RESTART_BM: 'NVIDIA says power-cycle the machine',
  RESTART_VM: 'NVIDIA says replace the VM',
  CHECK_MECHANICALS: 'NVIDIA says a person must check the hardware (power cabling)',
  CONTACT_SUPPORT: 'NVIDIA says contact support (no automated action)',
  UPDATE_SWFW: 'NVIDIA says update the driver or firmware',
  CHECK_UVM: "NVIDIA says check the host's unified-memory (UVM) driver",
  WORKFLOW_XID_45: 'NVIDIA says: alone, restart Fabric Manager; with other XIDs, ignore it and follow them',
  WORKFLOW_XID_48:
    'NVIDIA says reset the GPU (reboot if that fails); replace it only when the SRAM uncorrectable ' +
    'threshold is exceeded',
  WORKFLOW_NVLINK_ERR: 'NVIDIA says reset the GPU or reboot, check the links, replace if it recurs',
  WORKFLOW_NVLINK5_ERR: "NVIDIA says decode intrinfo/errorStatus and act on the decode sheet's row",
  XID_154: 'NVIDIA says obey the recovery action the driver names',
  NONE_GIVEN: "NVIDIA's catalog names this XID but gives no action yet",
};

/** "XID 79 (GPU has fallen off the bus) on GPU 3 (GPU-5f2c3a1e…) of node gpu-a100-07: NVIDIA says …" */
export function triggerWords(event: TriggerEvent, site: FaultSite): string {
  if (event.detailType === 'GPU XID Error') {
    const d = event.detail;
    const info = describeXid(d.xid);
    const ra = d.recoveryAction ? `; the driver asks for recovery action ${d.recoveryAction}` : '';
    const nvidia = info.listed ? BUCKET_WORDS[info.nvidiaAction] : "NVIDIA's catalog does not list it";
    return `XID ${d.xid} (${info.meaning}) on ${gpuWords(site)} of node ${d.node}: ${nvidia}${nvlinkWords(d)}${ra}`;
  }
  if (event.detailType === 'Operator Request')
    return `quarantine of ${gpuWords(site)} of node ${event.detail.node} asked by ${event.detail.by}`;
  const d = event.detail;
  const measured =
    d.value !== undefined
      ? ` (${d.value}${d.unit ? ' ' + d.unit : ''}${d.threshold !== undefined ? `, threshold ${d.threshold}` : ''})`
      : '';
  const ra = d.recoveryAction ? ` asking for ${d.recoveryAction}` : '';
  return (
    `health condition ${d.condition}${ra} ${d.state} at ${d.severity}${measured} on ` +
    `${gpuWords(site)} of node ${d.node}: ${d.message}`
  );
}

/**
 * "; decoded: NETIR_BER_EVENT (intrinfo 0x00000013, errorStatus 0x00000000): IGNORE, Non-fatal; …" for NVLink5 XIDs.
 */
function nvlinkWords(d: GpuXidErrorDetail): string {
  if (!d.nvlink) return '';
  const decoded = decodeNvlink5(d.xid, d.nvlink.intrinfo, d.nvlink.errorStatus);
  const link = d.nvlink.link !== undefined ? ` on link ${d.nvlink.link}` : '';
  return decoded
    ? `; decoded${link}: ${decodeWords(decoded)}`
    : `; ${d.nvlink.unit}${link} is not in NVIDIA's decode sheet`;
}

/** An XID 45 that is another XID's cleanup (NVIDIA's WORKFLOW_XID_45, not solo). */
export function xid45FollowsWords(words: string, other: string): string {
  return (
    `${words}: it follows ${other} on this GPU, so it is that error's cleanup: ignored, the ` +
    `${other} incident decides`
  );
}

/** NVIDIA's WORKFLOW_XID_48 (workflows.ts `xid48Workflow`): what a 63 or 64 beside the 48 means. */
export const XID48_WITH_63 =
  'with XID 63: the row is remapped, running work is safe: fence new work, reset when it ends';
export const XID48_WITH_64 = 'with XID 64: the row remap failed: NVIDIA says reset now and contact support';
export const XID64_AFTER_48 =
  'after XID 48: the row remap of that DBE failed: NVIDIA says reset now and contact support';
export const XID63_BELONGS_TO_48 =
  'it records the remap of the XID 48 just before on this GPU: that incident decides, and its reset applies the remap';

/** An application XID on a card ACK shares whose process names no pod (plan.ts `unknownWorkload`). */
export function unknownWorkloadWords(site: FaultSite): string {
  return (
    `counting one incident of an unknown workload: ${gpuWords(site)} is shared (ACK cGPU) and the XID's ` +
    'process names no pod, so none of its tenants is restarted for it'
  );
}

export function actionWords(action: RemediationAction, node: string, site: FaultSite, pods: number): string {
  const moved = pods === 1 ? '1 pod' : `${pods} pods`;
  switch (action) {
    case 'ignore':
      return 'informational only: nothing to do';
    case 'observe':
      return 'observing: recorded in the node history, nothing moved';
    case 'restart-workload':
      return `restarting the affected workload: evicting ${moved} (disruption budgets apply)`;
    case 'quarantine-gpu':
      // Device plugins fence whole GPUs (the ACK file, NVIDIA's latch): one MIG instance has no fence.
      if (site.scope === 'mig-instance')
        return (
          `quarantining ${gpuWords(site)}: evicting the ${moved} on it (disruption budgets ` +
          `apply); no fence holds one MIG instance out (the device plugins fence whole GPUs), so ` +
          `new work may still be placed on it; the rest of the node keeps working`
        );
      return (
        `quarantining ${gpuWords(site)}: no new work lands on it, evicting the ${moved} on it ` +
        `(disruption budgets apply); the rest of the node keeps working`
      );
    case 'drain-node':
      return `draining node ${node}: taint, cordon, evict ${moved} (disruption budgets apply)`;
    case 'reboot-node':
      return `draining node ${node} (evict ${moved}) so it can be rebooted`;
    case 'replace-node':
      return `draining node ${node} (evict ${moved}) so it can be replaced`;
  }
}

/** " (DRA claim ml/train is shared: 2 more of its pods move with it, so Kubernetes can deallocate it …)" */
export function claimMoveWords(m: ClaimMove, before: number): string {
  const claims = m.claims.length === 1 ? `DRA claim ${m.claims[0]} is` : `DRA claims ${m.claims.join(', ')} are`;
  const more = m.pods.length - before;
  return (
    ` (${claims} shared: ${more === 1 ? '1 more of its pods moves' : `${more} more of its pods move`} with it, ` +
    'so Kubernetes can deallocate it from this GPU; a claim any pod still reserves stays where it is)'
  );
}

/**
 * Where the moved pods come from when the agent traced no process to a pod: the kubelet's PodResources
 * allocation, or — unknown — every GPU pod of the node, as before PodResources was read.
 */
export function evidenceWords(site: FaultSite, holding: readonly DeviceHolder[] | undefined): string {
  if (site.scope === 'node' || !site.gpu) return '';
  if (holding === undefined)
    return (
      " (the agent traced no process to a pod and the kubelet's PodResources is unknown: " +
      'every GPU pod of the node is moved)'
    );
  const n = new Set(holding.map((h) => `${h.namespace}/${h.name}`)).size;
  const who = n === 1 ? '1 pod holds' : `${n} pods hold`;
  return ` (the agent traced no process to a pod: the kubelet's PodResources says ${who} it)`;
}

/** quarantine-gpu under letWorkFinish (DRAIN_AND_RESET): fenced now, its pods left to finish. */
export function letFinishWords(site: FaultSite, pods: number, until: string): string {
  const running =
    pods === 0
      ? 'nothing runs on it'
      : `its ${pods === 1 ? '1 running pod is' : `${pods} running pods are`} left to finish until ` +
        `${until} (then what is left is evicted, disruption budgets apply)`;
  return (
    `quarantining ${gpuWords(site)}: no new work lands on it; ${running}; the reset waits for ` +
    `them; the rest of the node keeps working`
  );
}

/** What happens after this action, given what the handler can repair. */
export function nextWords(
  ladder: readonly RemediationAction[],
  level: number,
  capabilities: Capabilities | undefined,
  recovery: Recovery = 'reset',
): string {
  const action = ladder[level];
  const next = ladder[level + 1];
  const repair = repairOf(ladder, level);
  if (action === 'drain-node' || action === 'reboot-node' || action === 'replace-node') {
    if (!repair)
      return 'next: once drained, the node waits for a person to repair it and annotate gpu-reflex.io/repaired-at';
    if (capabilities?.repairOwner)
      return (
        `next: once drained, ${capabilities.repairOwner} repairs the node (gpu-reflex defers ` +
        `to it), and once back it returns on a passed probe (a node-wide fault: after the quiet period)`
      );
    const can = repair === 'reboot-node' ? capabilities?.reboot : capabilities?.replace;
    if (can && repair === 'replace-node')
      return (
        'next: once drained, replace the node, capacity first: its node pool grows by one, and ' +
        'once the new node is Ready the old one is removed from the pool and released'
      );
    const verb = repair === 'reboot-node' ? 'reboot' : 'replace';
    const cannot = capabilities?.unreachable
      ? `the cloud cannot ${verb} it (${capabilities.unreachable})`
      : `no cloud adapter can ${verb} it`;
    return can
      ? 'next: once drained, reboot the node, then return it on a passed probe (a node-wide fault: ' +
          'after the quiet period)'
      : `next: once drained, the node waits at awaiting-repair: ${cannot}, so a person must, then annotate ` +
          'gpu-reflex.io/repaired-at';
  }
  if (action === 'quarantine-gpu') {
    switch (recovery) {
      case 'replace':
        return (
          `next: NVIDIA says this GPU must be replaced (RMA), so it stays fenced and no reset ` +
          `is tried; once the fence is seen, ${replaceWords(next, capabilities)}`
        );
      case 'quiesce':
        return (
          "next: once its pods are gone the driver's recovery action is read again: none " +
          'returns the GPU after the quiet period, a reset request has it reset and probed'
        );
      case 'instance':
        return `next: the incident closes after the quiet period${next ? `; if it repeats: ${next}` : ''}`;
      case 'resolve':
        return (
          `next: it stays fenced until the node agent reports the condition resolved, then ` +
          `returns after the quiet period${next ? `; if it comes back: ${next}` : ''}`
        );
      default:
        return (
          `next: once its pods are gone the node agent resets the GPU, and it returns only ` +
          `after a health probe passes${next ? `; if the reset fails or the fault returns: ${next}` : ''}`
        );
    }
  }
  return next ? `next: if it repeats, ${next}` : 'next: nothing unless it gets worse';
}

/** Where an RMA-class GPU quarantine goes once its fence is seen (sweep-gpu.ts replaceGpu, then climb). */
function replaceWords(next: RemediationAction | undefined, caps: Capabilities | undefined): string {
  const person = 'a person must replace it, then annotate gpu-reflex.io/repaired-at';
  if (next !== 'replace-node') return `it waits at awaiting-repair: ${person}`;
  if (caps?.repairOwner) return `the node is drained and left to ${caps.repairOwner} to repair`;
  if (caps?.replace) return 'the node is drained and replaced through its node pool, capacity first';
  return (
    `the node is drained and waits at awaiting-repair ` +
    `(${caps?.unreachable ?? 'no cloud adapter can replace it'}): ${person}`
  );
}

/** The repair a drain leads to: the action itself if it is one, else the next rung if it is one. */
export function repairOf(
  ladder: readonly RemediationAction[],
  level: number,
): 'reboot-node' | 'replace-node' | undefined {
  for (const a of [ladder[level], ladder[level + 1]]) if (a === 'reboot-node' || a === 'replace-node') return a;
  return undefined;
}

/**
 * What a dry run says instead of "Now …": the action it would have taken, in the conditional
 * ("Now draining node n: …" → "Would drain node n: …"). Applied by the dry-run publisher
 * (lib/dry-run.ts) to the reason the plan rendered, so the plan stays the live one. Each opening
 * is one this file writes (actionWords, letFinishWords, unknownWorkloadWords).
 */
const WOULD: readonly (readonly [string, string])[] = [
  ['Now draining ', 'Would drain '],
  ['Now quarantining ', 'Would quarantine '],
  ['Now restarting ', 'Would restart '],
  ['Now observing:', 'Would observe:'],
  ['Now counting ', 'Would count '],
  ['Now informational only: nothing to do', 'Would do nothing: informational only'],
];

export function wouldWords(reason: string): string {
  for (const [now, would] of WOULD) if (reason.includes(now)) return reason.replace(now, would);
  return reason;
}
