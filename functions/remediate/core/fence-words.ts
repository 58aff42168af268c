/**
 * Fence reasons in words (split from words.ts, which re-exports them): how a GPU is kept out of
 * scheduling, the node's Kubernetes Event when a fence changes, and why a reset became a reboot.
 */
import type { Policy } from './policy.ts';
import type { Incident } from './state.ts';
import type { KubeEventNote } from '../../lib/plan.ts';
import type { ResetSupport } from './reset-support.ts';

/** The node an incident is on: its key starts with it (`node/GPU-…/xid-79`). */
const nodeOf = (i: Incident) => i.key.slice(0, i.key.indexOf('/'));

/** How an incident's GPU is being kept out of scheduling, in words (the Remediation's reason). */
export function fenceWords(i: Incident, policy: Pick<Policy, 'fence'>): string {
  const f = i.fence;
  if (!f) return '';
  const what = i.xid !== undefined ? `XID ${i.xid}` : (i.condition ?? i.trigger);
  if (f.fallback === 'plugin-latches-one-mig-device')
    return (
      `${i.gpu} is a MIG GPU, and NVIDIA's device plugin latches only one of its instances for ` +
      `${what} (it keys health by the parent GPU), leaving the others schedulable: the node is ` +
      `tainted NoSchedule while it is out (fence fallback).`
    );
  if (f.fallback === 'not-fenced-by-plugin')
    return (
      `NVIDIA's device plugin does not take the GPU out for ${what} by itself, so the node is ` +
      `tainted NoSchedule while ${i.gpu} is out (fence fallback).`
    );
  if (f.backend === 'cordon')
    return (
      `This pool fences by node taint (fence backend cordon): the node is tainted NoSchedule ` +
      `while ${i.gpu} is out.`
    );
  if (f.fallback === 'no-dra-device')
    return (
      `No ResourceSlice of the node lists ${i.gpu} under the DRA driver ` +
      `${policy.fence.dra.driver}, so the node is tainted NoSchedule while it is out (fence fallback).`
    );
  if (f.backend === 'dra')
    return (
      `${i.gpu} is fenced by a DRA DeviceTaintRule (NoSchedule) on its device; it must be ` +
      `there within ${policy.fence.verifyMinutes} min, else the node is tainted.`
    );
  if (f.backend === 'ack-cgpu')
    return (
      `${i.gpu} is on a node that shares its GPUs through ACK cGPU, where the ACK device plugin's ` +
      'unhealthy-devices file fences nothing (the gpushare plugin never reads it): ' +
      `card ${i.gpuIndex ?? '?'} is listed in ConfigMap kube-system/unhealthy-gpu-${nodeOf(i)} ` +
      "instead, which ACK's gpushare scheduler extender skips; the ConfigMap must list it within " +
      `${policy.fence.verifyMinutes} min, else the node is tainted.`
    );
  if (f.backend === 'nvidia-plugin')
    return (
      `NVIDIA's device plugin takes ${i.gpu} out for ${what} by itself; the node's allocatable ` +
      `must show it within ${policy.fence.verifyMinutes} min, else the node is tainted.`
    );
  return (
    `${i.gpu} is fenced through the ACK device plugin's unhealthy-devices file (the node agent ` +
    `writes it and keeps it there); within ${policy.fence.verifyMinutes} min the agent must say the ` +
    `file lists it and the node's allocatable must show it out, past what was out before, else the node is tainted.`
  );
}

/**
 * The Kubernetes Event on the node for a fence that did not hold, was restored, or fell back to the
 * node taint (fence-check.ts): `kubectl describe node` shows why the GPU's scheduling changed.
 */
export function fenceEventNote(kind: 'lost' | 'restored' | 'escalated', why: string): KubeEventNote {
  const reason = { lost: 'GpuFenceLost', restored: 'GpuFenceRestored', escalated: 'GpuFenceEscalated' }[kind];
  return { type: kind === 'restored' ? 'Normal' : 'Warning', reason, action: 'Fence', note: `gpu-reflex: ${why}` };
}

/**
 * Why a GPU that needs a reset goes to a node reboot without one (reset-support.ts): the SKU, the
 * topology and the matrix row's source.
 */
export function resetSkippedWords(gpu: string | undefined, s: ResetSupport): string {
  const how =
    s.verdict === 'all-gpus'
      ? 'NVIDIA resets these GPUs only all together, never one alone'
      : 'NVIDIA does not support resetting one GPU there';
  const where = `${s.product} on ${s.topology ?? 'an unknown topology'}${s.row ? ` (${s.row.systems})` : ''}`;
  return (
    `${gpu ?? 'the GPU'} needs a reset, but ${how}: ${where}, per ` +
    `${s.row?.source ?? 'no source'}; no reset tried, the node is rebooted instead`
  );
}
