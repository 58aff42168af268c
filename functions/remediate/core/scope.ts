/**
 * Narrowness: an incident concerns one MIG instance when the event names one, else one GPU, else
 * the node. The pods it affects are the ones the agent saw there, matched by UID to the node's
 * pods; when the agent saw none, the pods the kubelet's PodResources API says hold that GPU (or that
 * MIG device) — `holders` on the event, matched by namespace and name, DRA claim holders through the
 * node's ResourceSlice (driver, pool, device → the GPU's UUID), whether or not they request
 * `nvidia.com/gpu`; else, on a node ACK shares, the pods its gpushare scheduler annotated with the
 * card's index; else the pods the device plugin says hold that GPU; when nobody knows, every GPU pod
 * on the node. DaemonSet and mirror pods are never affected: evicting a DaemonSet pod only brings
 * it back, and mirror pods cannot be evicted.
 */
import {
  NVLINK5_XIDS,
  nvlink5Verdict,
  xidStaysInInstance,
  type GpuRef,
  type GpuXidErrorDetail,
  type DeviceHolder,
  type MigRef,
  type PodRef,
} from '../../../events/index.ts';
import type { DeviceRef } from '../../lib/plan.ts';
import type { PodFacts, RemediationFacts, Scope } from './types.ts';

/** The GPU a fault concerns: always its UUID; its index when the trigger knows it. */
export type GpuSite = Pick<GpuRef, 'uuid'> & { index?: number };

export interface FaultSite {
  scope: Scope;
  node: string;
  gpu?: GpuSite;
  mig?: MigRef;
  /** `xid-79` or the health condition. */
  trigger: string;
  /** Stable incident key: `node/GPU-…[/gi3]/xid-79`. */
  key: string;
  /** How the quarantined-gpus annotation names it: the MIG UUID, `GPU-…/gi3`, or the GPU UUID. */
  quarantineId?: string;
}

export function faultSite(facts: Pick<RemediationFacts, 'event'>): FaultSite {
  const { event } = facts;
  const d = event.detail;
  const trigger =
    event.detailType === 'GPU XID Error'
      ? xidTrigger(event.detail)
      : event.detailType === 'GPU Health Changed'
        ? event.detail.condition
        : 'operator';
  const gpu = d.gpu;
  // A whole-GPU XID seen on a MIG instance (95, 64, 48, …) is the whole GPU's: its reset destroys
  // every instance, so the incident, its fence and its pods are the GPU's (INSTANCE_SCOPED_XIDS).
  const wholeGpu = event.detailType === 'GPU XID Error' && !xidStaysInInstance(event.detail.xid);
  const mig = gpu && !wholeGpu ? d.mig : undefined;
  if (!gpu) return { scope: 'node', node: d.node, trigger, key: `${d.node}/${trigger}` };
  if (mig) {
    return {
      scope: 'mig-instance',
      node: d.node,
      gpu,
      mig,
      trigger,
      key: `${d.node}/${gpu.uuid}/gi${mig.gpuInstanceId}/${trigger}`,
      quarantineId: mig.uuid ?? `${gpu.uuid}/gi${mig.gpuInstanceId}`,
    };
  }
  return { scope: 'gpu', node: d.node, gpu, trigger, key: `${d.node}/${gpu.uuid}/${trigger}`, quarantineId: gpu.uuid };
}

/**
 * `xid-79`. An NVLink5 XID (144–150) that NVIDIA's decode (or its Nonfatal line) calls non-fatal is
 * `xid-149-nonfatal`, its own observed incident: otherwise an open observe of a BER event would stand
 * in for the fatal NETIR_LINK_DOWN of the same XID that follows it, and the GPU would never be reset.
 */
function xidTrigger(d: GpuXidErrorDetail): string {
  if (!NVLINK5_XIDS.has(d.xid)) return `xid-${d.xid}`;
  return nvlink5Verdict(d.xid, d.nvlink, d.severity).verdict === 'observe' ? `xid-${d.xid}-nonfatal` : `xid-${d.xid}`;
}

/** Pods that can be moved: not DaemonSet-owned, not mirror pods. */
export function evictable(pods: readonly PodFacts[]): PodFacts[] {
  return pods.filter((p) => !p.daemonSet && !p.mirror);
}

/** What the agent read from PodResources for the event (absent: unknown), and the node's DRA devices by GPU UUID. */
export interface HeldBy {
  holders: readonly DeviceHolder[] | undefined;
  draDevices?: Readonly<Record<string, DeviceRef>> | undefined;
}

/**
 * The holders of the site's device by PodResources: the MIG device's (by its UUID) for a MIG
 * instance, the GPU's (device-plugin devices on it, DRA devices the ResourceSlice says are it) for a
 * GPU. Undefined when that is unknown: no reading, no site device, or a MIG instance without its UUID.
 */
export function holdersAt(site: FaultSite, held: HeldBy | undefined): DeviceHolder[] | undefined {
  if (!held?.holders || !site.gpu || site.scope === 'node') return undefined;
  if (site.scope === 'mig-instance') {
    const mig = site.mig?.uuid;
    return mig ? held.holders.filter((h) => h.mig === mig) : undefined;
  }
  const uuid = site.gpu.uuid;
  const dev = held.draDevices?.[uuid];
  const isDev = (d: DeviceHolder['dra']) =>
    dev !== undefined && d !== undefined && d.driver === dev.driver && d.pool === dev.pool && d.device === dev.device;
  return held.holders.filter((h) => h.gpu === uuid || isDev(h.dra));
}

/** The pods a fault at `site` affects (see the file comment for the order of evidence). */
export function affectedPods(
  site: FaultSite,
  reported: readonly PodRef[] | undefined,
  pods: readonly PodFacts[],
  held?: HeldBy,
): PodFacts[] {
  const candidates = evictable(pods);
  if (reported && reported.length > 0) {
    const uids = new Set(reported.map((p) => p.uid));
    return candidates.filter((p) => uids.has(p.uid));
  }
  const gpuPods = candidates.filter((p) => p.requestsGpu);
  if (site.scope === 'node' || !site.gpu) return gpuPods;
  // The kubelet's allocation: exactly the pods given this device, a DRA pod without a GPU request too.
  const holding = holdersAt(site, held);
  if (holding) return candidates.filter((p) => holding.some((h) => h.namespace === p.namespace && h.name === p.name));
  // ACK gpushare: a card's tenants are the pods its scheduler extender gave that card (their
  // annotations, facts.ts); never the node's other cards' pods.
  const card = site.gpu.index;
  if (card !== undefined && pods.some((p) => p.cards !== undefined))
    return gpuPods.filter((p) => p.cards?.includes(card));
  const knowsAllocation = pods.some((p) => p.gpus !== undefined || p.migInstances !== undefined);
  if (!knowsAllocation) return gpuPods;
  const uuid = site.gpu.uuid;
  if (site.scope === 'mig-instance' && site.mig?.uuid) {
    const mig = site.mig.uuid;
    return gpuPods.filter((p) => p.migInstances?.includes(mig));
  }
  return gpuPods.filter((p) => p.gpus?.includes(uuid));
}

/** Pods a shared DRA claim brings along, and the claims (`namespace/name`) that brought them. */
export interface ClaimMove {
  pods: PodFacts[];
  claims: string[];
}

/**
 * A DRA claim on the faulty GPU moves whole (issue #32). Pods that name the same `resourceClaimName`
 * share one claim, and Kubernetes never deallocates a claim a pod still reserves
 * (ResourceClaimStatus.reservedFor, resource.k8s.io API reference: "a claim that is in use or might
 * be in use because it has been reserved must not get deallocated"), while a NoSchedule device taint
 * applies to the claim and every pod that uses it
 * (kubernetes.io/docs/concepts/scheduling-eviction/dynamic-resource-allocation device taints). So
 * moving one consumer leaves the claim on the broken GPU: its replacement waits Pending behind the
 * taint and the other consumers keep running there. Every consumer PodResources names for a claim
 * that holds the site's GPU and has one of `moving` among its consumers moves with it; undefined when
 * no claim adds anyone (or PodResources is unknown).
 */
export function claimMove(
  site: FaultSite,
  moving: readonly PodFacts[],
  pods: readonly PodFacts[],
  held: HeldBy | undefined,
): ClaimMove | undefined {
  if (!held?.holders) return undefined;
  const key = (ns: string, name: string) => `${ns}/${name}`;
  const movingKeys = new Set(moving.map((p) => key(p.namespace, p.name)));
  const onDevice = (holdersAt(site, held) ?? []).filter((h) => h.dra);
  const claims = new Set(
    onDevice
      .filter((h) => movingKeys.has(key(h.namespace, h.name)))
      .map((h) => key(h.dra!.claimNamespace, h.dra!.claim)),
  );
  if (claims.size === 0) return undefined;
  const consumers = new Set(
    held.holders
      .filter((h) => h.dra && claims.has(key(h.dra.claimNamespace, h.dra.claim)))
      .map((h) => key(h.namespace, h.name)),
  );
  const added = evictable(pods).filter(
    (p) => consumers.has(key(p.namespace, p.name)) && !movingKeys.has(key(p.namespace, p.name)),
  );
  return added.length === 0 ? undefined : { pods: [...moving, ...added], claims: [...claims].sort() };
}

export function podTarget(p: { namespace: string; name: string }): string {
  return `pod/${p.namespace}/${p.name}`;
}

export function nodeTarget(node: string): string {
  return `node/${node}`;
}

/** Short GPU label for reasons: `GPU 3 (GPU-5f2c3a1e…)`. */
export function gpuWords(site: FaultSite): string {
  if (!site.gpu) return `node ${site.node}`;
  const g =
    site.gpu.index !== undefined ? `GPU ${site.gpu.index} (${site.gpu.uuid.slice(0, 12)}…)` : `GPU ${site.gpu.uuid}`;
  return site.mig
    ? `MIG instance ${site.mig.gpuInstanceId}${site.mig.profile ? ` (${site.mig.profile})` : ''} of ${g}`
    : g;
}
