import type { GpuUtilizationSummaryDetail } from '../../../events/index.ts';
import type { IdlePolicy } from './policy.ts';
import { MIG_MODELS } from '../../lib/mig-profiles.ts';

/** A device's reading in one summary, a MIG instance's share of its GPU, and what idle time cost (planner.ts). */
type Reading = 'idle' | 'busy' | 'unknown';

/**
 * Why the summary's readings do not speak for its whole window, or undefined when they do. The agent says how long
 * it went without a sample inside the window (`unsampledMs`: a stall, NVML failing): the max of the samples taken
 * before a stall says nothing of the stall, so such a window is unknown for every device. Whole, not its sampled
 * part: a run is one stretch of time from `since` to `lastEnd` (its idle time, its cost, its history), and a window
 * with a hole in it cannot be carried on without counting the hole — ending the run errs toward evicting no one.
 * A summary without the field comes from an agent older than it (functions are upgraded first: docs/upgrade.md),
 * which cannot say whether it sampled throughout: unknown too, until the node's agent is upgraded.
 */
export function unsampled(summary: GpuUtilizationSummaryDetail): string | undefined {
  if (summary.unsampledMs === undefined)
    return 'its agent does not say whether it sampled the whole window (an agent older than unsampledMs)';
  if (summary.unsampledMs > 0)
    return `its agent did not sample for ${Math.round(summary.unsampledMs / 1000)} s of the window (a stall)`;
  return undefined;
}

/**
 * The device's reading in this summary: max over the window under the threshold, for every measure it has, and
 * the window sampled throughout. A window with a stall still reads busy when its samples say so: work seen is work.
 */
export function readDevice(
  summary: GpuUtilizationSummaryDetail,
  gpu: string,
  mig: string | undefined,
  thresholdPercent: number,
): Reading {
  const r = readSamples(summary, gpu, mig, thresholdPercent);
  return r === 'idle' && unsampled(summary) !== undefined ? 'unknown' : r;
}

function readSamples(
  summary: GpuUtilizationSummaryDetail,
  gpu: string,
  mig: string | undefined,
  thresholdPercent: number,
): Reading {
  const g = summary.gpus.find((x) => x.uuid === gpu);
  if (!g) return 'unknown';
  const under = (a: { max: number }) => a.max < thresholdPercent;
  if (mig !== undefined) {
    // NVML gives no SM utilization per MIG instance without GPM: an instance counts idle only while its
    // framebuffer stays (nearly) empty — a loaded model reads busy, never the other way round.
    const m = g.migDevices.find((d) => d.uuid === mig);
    if (!m?.framebufferUsedPercent) return 'unknown';
    return under(m.framebufferUsedPercent) ? 'idle' : 'busy';
  }
  if (!g.utilPercent || !g.memoryUtilPercent) return 'unknown';
  return under(g.utilPercent) && under(g.memoryUtilPercent) ? 'idle' : 'busy';
}

/**
 * The share of a GPU a MIG profile is: its compute slices over its GPU model's, from the MIG catalog
 * (lib/mig-profiles.ts, facts in docs/mig.md): `3g.40gb` → 3/7 on an A100/H100, `4g.24gb` → 4/4 on an A30. A name the
 * catalog does not list, or lists for models of different geometry, is read as the 8-slice family's (7 compute
 * slices: A100, H100, H200, B200), the geometry of every model but the A30.
 */
export function migShare(profile: string | undefined): number {
  const g = /^(\d)g\./.exec(profile ?? '');
  if (!g) return 1;
  const of = new Set(MIG_MODELS.filter((m) => m.profiles.some((x) => x.name === profile)).map((m) => m.computeSlices));
  const slices = of.size === 1 ? [...of][0]! : 7;
  return Math.min(1, Number(g[1]) / slices);
}

export function idleCost(policy: IdlePolicy, instanceType: string | undefined, idleMs: number, share: number) {
  const price = instanceType !== undefined ? policy.prices[instanceType] : undefined;
  if (price === undefined) return undefined;
  const gpuHours = round((idleMs / 3_600_000) * share, 3);
  return { gpuHours, amount: round(gpuHours * price, 2), currency: policy.currency, pricePerGpuHour: price };
}

export const round = (v: number, digits: number) => Math.round(v * 10 ** digits) / 10 ** digits;

/**
 * GPUs a pod holds: whole GPUs, MIG devices as their share of a GPU (`nvidia.com/mig-3g.40gb` → 3/7, readings.ts
 * migShare), and a time-sliced or MPS replica as 1/replicas of one: NVIDIA's device plugin advertises GPUs × replicas
 * (as `nvidia.com/gpu`, or `nvidia.com/gpu.shared` renamed) and labels the node `nvidia.com/gpu.replicas`, replicas
 * per GPU (k8s-device-plugin internal/lm/resource.go, api/config/v1/replicas.go). `node`: the pod's node's labels.
 * Undefined: unknown — a replica (`nvidia.com/gpu.shared`, or a node whose sharing strategy shares) whose node does
 * not say how many replicas a GPU has.
 */
export function gpusOf(
  resources: Readonly<Record<string, number>>,
  node: Readonly<Record<string, string>> = {},
): number | undefined {
  const label = node[REPLICAS_LABEL];
  const replicas = label !== undefined && /^[1-9]\d*$/.test(label) ? Number(label) : undefined;
  const strategy = node[SHARING_STRATEGY_LABEL];
  const shares = strategy === 'time-slicing' || strategy === 'mps';
  let n = 0;
  for (const [r, q] of Object.entries(resources)) {
    if (q <= 0) continue;
    if (r === 'nvidia.com/gpu.shared' || (r === 'nvidia.com/gpu' && (shares || replicas !== undefined))) {
      if (replicas === undefined) return undefined;
      n += q / replicas;
    } else if (r === 'nvidia.com/gpu') n += q;
    else if (r.startsWith('nvidia.com/mig-')) n += q * migShare(r.slice('nvidia.com/mig-'.length));
  }
  return n;
}

/** Replicas per GPU, and how a node's GPUs are shared (`none`, `time-slicing`, `mps`): NVIDIA's device plugin. */
const REPLICAS_LABEL = 'nvidia.com/gpu.replicas';
const SHARING_STRATEGY_LABEL = 'nvidia.com/gpu.sharing-strategy';
