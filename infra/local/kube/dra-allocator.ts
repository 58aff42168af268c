import { celHolds, deviceKey as key, untolerated, type DeviceToleration, type SliceDevice } from './dra-devices.ts';
import { toleratesTaint } from './predicates.ts';
import type { Store } from './store.ts';
import type { KubeObject, Pod, Taint } from './types.ts';

export { publishedDevices, SLICES, TAINT_RULES } from './dra-devices.ts';

/**
 * DRA claims allocated as kube-scheduler's DynamicResources plugin and kube-controller-manager's
 * resourceclaim controller do it, written from Kubernetes' documents (never from gpu-reflex's code):
 *
 * - KEP-4381 "DRA with structured parameters" (kubernetes/enhancements keps/sig-node/
 *   4381-dra-structured-parameters) and https://kubernetes.io/docs/concepts/scheduling-eviction/
 *   dynamic-resource-allocation/: a pod's `spec.resourceClaims` entry names a ResourceClaim
 *   (`resourceClaimName`, shared by every pod naming it) or a ResourceClaimTemplate, from which the
 *   resourceclaim controller makes a claim for that pod alone (generateName `<pod>-<entry>-`, owned by
 *   the pod, annotation `resource.kubernetes.io/pod-claim-name`, recorded in the pod's
 *   `status.resourceClaimStatuses`). The scheduler allocates an unallocated claim from the devices the
 *   nodes' ResourceSlices publish (none in use by another claim, each matching its DeviceClass and the
 *   request's selectors, `count` of them), writes `status.allocation` (devices.results driver/pool/
 *   device, nodeSelector = the node) and adds the pod to `status.reservedFor` (at most 256). A pod
 *   whose claim is already allocated can only go to the allocation's node (DynamicResources Filter:
 *   "resourceclaim not available on the node"); a claim no node can satisfy: "cannot allocate all claims".
 * - KEP-5055 "DRA device taints and tolerations" (keps/sig-scheduling/5055-dra-device-taints-and-
 *   tolerations) and .../dynamic-resource-allocation/device-taints/: a device's taints are its
 *   ResourceSlice's plus those of every DeviceTaintRule selecting it (cumulative). NoSchedule and
 *   NoExecute taints not tolerated by the request's tolerations keep the device from allocation, and
 *   the scheduler lets no new pod reserve an allocated claim that has such a device; NoExecute also
 *   deletes the pods using the claim (the eviction controller, like node taint eviction), after
 *   `tolerationSeconds` from the taint's `timeAdded` where tolerated for a while; `None` is informational.
 *   A pod that ended is taken out of `reservedFor`, and a claim with no consumer left is deallocated
 *   (KEP-5055, Design Details, quoting the resourceclaim controller).
 *
 * Only the CEL the simulator's device classes use is evaluated (see `celHolds`); anything else
 * leaves the claim unallocated with the expression named, never read as a match.
 */
export const CLAIMS = 'resourceclaims.resource.k8s.io';
export const CLAIM_TEMPLATES = 'resourceclaimtemplates.resource.k8s.io';
export const DEVICE_CLASSES = 'deviceclasses.resource.k8s.io';
/** The annotation the resourceclaim controller puts on a claim it made from a template. */
export const POD_CLAIM_NAME = 'resource.kubernetes.io/pod-claim-name';
/** ResourceClaimReservedForMaxSize (resource.k8s.io API reference, ResourceClaimStatus.reservedFor). */
export const RESERVED_FOR_MAX = 256;
export const CANNOT_ALLOCATE = 'cannot allocate all claims';
export const NOT_ON_NODE = 'resourceclaim not available on the node';

interface ExactRequest {
  deviceClassName?: string;
  allocationMode?: 'ExactCount' | 'All';
  count?: number;
  selectors?: { cel?: { expression?: string } }[];
  tolerations?: DeviceToleration[];
}
interface DeviceRequest {
  name: string;
  exactly?: ExactRequest;
  firstAvailable?: unknown[];
}
interface Result {
  request: string;
  driver: string;
  pool: string;
  device: string;
}
export interface Claim extends KubeObject {
  spec?: { devices?: { requests?: DeviceRequest[]; constraints?: unknown[] } };
  status?: {
    allocation?: { devices?: { results?: Result[] }; nodeSelector?: unknown; allocationTimestamp?: string };
    reservedFor?: { resource: string; name: string; uid: string }[];
  };
}

interface PodClaimEntry {
  name?: string;
  resourceClaimName?: string;
  resourceClaimTemplateName?: string;
}

export const podClaimEntries = (pod: Pod): PodClaimEntry[] =>
  (pod.spec.resourceClaims as PodClaimEntry[] | undefined) ?? [];

export const hasClaims = (pod: Pod): boolean => podClaimEntries(pod).length > 0;

/**
 * The claim object behind the pod's entry `entry` (resourceclaim.Name, k8s.io/dynamic-resource-allocation):
 * its own `resourceClaimName`, or what the controller recorded in `status.resourceClaimStatuses`.
 */
export function claimNameOf(pod: Pod, entry: string): string | undefined {
  const e = podClaimEntries(pod).find((c) => c.name === entry);
  if (e?.resourceClaimName) return e.resourceClaimName;
  const statuses = (pod.status as { resourceClaimStatuses?: { name: string; resourceClaimName?: string }[] })
    ?.resourceClaimStatuses;
  return statuses?.find((s) => s.name === entry)?.resourceClaimName;
}

/** Which device names of the claim's allocation (`gpu-3`), or none when it is not allocated. */
export function allocatedDevices(claim: Claim | undefined): Result[] {
  return claim?.status?.allocation?.devices?.results ?? [];
}

export type Allocation = { claims: Claim[] } | { reason: string };

/**
 * Can the pod's claims all be had on `node`, and with which devices? Returns the claims as they
 * would be stored (allocated where they were not, the pod reserved), or the scheduler's reason for
 * this node. `inUse`: devices other claims hold.
 */
export function allocateOn(
  pod: Pod,
  node: { name: string; labels: Readonly<Record<string, string>> },
  claims: readonly Claim[],
  devices: readonly SliceDevice[],
  classes: ReadonlyMap<string, KubeObject>,
  inUse: ReadonlySet<string>,
  nowIso: string,
): Allocation {
  const taken = new Set(inUse);
  const out: Claim[] = [];
  for (const claim of claims) {
    const reserved = claim.status?.reservedFor ?? [];
    const reserve = reserved.some((r) => r.uid === pod.metadata.uid)
      ? reserved
      : [...reserved, { resource: 'pods', name: pod.metadata.name, uid: pod.metadata.uid }];
    if (claim.status?.allocation) {
      if (!nodeOf(claim) || nodeOf(claim) !== node.name) return { reason: NOT_ON_NODE };
      out.push({ ...claim, status: { ...claim.status, reservedFor: reserve } });
      continue;
    }
    const picked: Result[] = [];
    for (const req of claim.spec?.devices?.requests ?? []) {
      const ex = req.exactly!;
      const cls = classes.get(ex.deviceClassName ?? '');
      const exprs = [
        ...((cls?.spec as { selectors?: { cel?: { expression?: string } }[] } | undefined)?.selectors ?? []),
        ...(ex.selectors ?? []),
      ].map((s) => s.cel?.expression ?? '');
      const fits = devices.filter(
        (d) =>
          d.node === node.name &&
          exprs.every((e) => celHolds(e, d) === true) &&
          untolerated(d.taints, ex.tolerations).length === 0,
      );
      const free = fits.filter((d) => !taken.has(key(d)));
      const want = ex.allocationMode === 'All' ? fits.length : (ex.count ?? 1);
      if (want === 0 || free.length < want || (ex.allocationMode === 'All' && free.length < fits.length))
        return { reason: CANNOT_ALLOCATE };
      for (const d of free.slice(0, want)) {
        taken.add(key(d));
        picked.push({ request: req.name, driver: d.driver, pool: d.pool, device: d.device });
      }
    }
    const nodeSelector = {
      nodeSelectorTerms: [{ matchFields: [{ key: 'metadata.name', operator: 'In', values: [node.name] }] }],
    };
    out.push({
      ...claim,
      status: {
        ...claim.status,
        allocation: { devices: { results: picked }, nodeSelector, allocationTimestamp: nowIso },
        reservedFor: reserve,
      },
    });
  }
  return { claims: out };
}

/** The node an allocated claim is bound to (its allocation's node selector names it). */
export function nodeOf(claim: Claim): string | undefined {
  const sel = claim.status?.allocation?.nodeSelector as
    { nodeSelectorTerms?: { matchFields?: { key: string; values?: string[] }[] }[] } | undefined;
  return sel?.nodeSelectorTerms?.[0]?.matchFields?.find((f) => f.key === 'metadata.name')?.values?.[0];
}

/**
 * What keeps the pod's claims from being used at all, before any node is tried (DynamicResources
 * PreFilter), or undefined: a missing claim, one being deleted, a full `reservedFor`, a request the
 * simulator does not model, a missing DeviceClass, CEL outside the subset, and (KEP-5055) an
 * allocated claim with a device tainted NoSchedule/NoExecute that its request does not tolerate.
 */
export function claimsBlocked(
  pod: Pod,
  claims: readonly (Claim | undefined)[],
  names: readonly string[],
  devices: readonly SliceDevice[],
  classes: ReadonlyMap<string, KubeObject>,
): string | undefined {
  for (const [i, claim] of claims.entries()) {
    if (!claim) return `resourceclaim.resource.k8s.io "${names[i]}" not found`;
    if (claim.metadata.deletionTimestamp) return `resourceclaim "${names[i]}" is being deleted`;
    const reserved = claim.status?.reservedFor ?? [];
    if (!reserved.some((r) => r.uid === pod.metadata.uid) && reserved.length >= RESERVED_FOR_MAX)
      return 'resourceclaim in use';
    const requests = claim.spec?.devices?.requests ?? [];
    if ((claim.spec?.devices?.constraints ?? []).length > 0)
      return `resource claim ${names[i]}: constraints are not modelled by the simulated scheduler`;
    for (const r of requests) {
      if (!r.exactly) return `resource claim ${names[i]}, request ${r.name}: only "exactly" requests are simulated`;
      if (!classes.has(r.exactly.deviceClassName ?? ''))
        return `request ${r.name}: device class ${r.exactly.deviceClassName} does not exist`;
      const cls = classes.get(r.exactly.deviceClassName!)!;
      for (const s of [
        ...((cls.spec as { selectors?: { cel?: { expression?: string } }[] })?.selectors ?? []),
        ...(r.exactly.selectors ?? []),
      ]) {
        const e = s.cel?.expression ?? '';
        if (devices.length > 0 && celHolds(e, devices[0]!) === undefined)
          return `request ${r.name}: the simulated scheduler cannot evaluate CEL "${e}"`;
      }
    }
    if (claim.status?.allocation) {
      const byKey = new Map(devices.map((d) => [key(d), d]));
      for (const res of allocatedDevices(claim)) {
        const tol = requests.find((r) => r.name === res.request)?.exactly?.tolerations;
        const bad = untolerated(byKey.get(key(res))?.taints ?? [], tol);
        const t = bad[0];
        if (t)
          return `resourceclaim ${names[i]}: device ${key(res)} has untolerated taint {${t.key}: ${t.value ?? ''}}`;
      }
    }
  }
  return undefined;
}

/** Devices held by allocated claims (every claim in the store but `except`'s uids), as `driver/pool/device`. */
export function devicesInUse(store: Store, except: ReadonlySet<string> = new Set()): Set<string> {
  const out = new Set<string>();
  for (const c of store.list(CLAIMS) as Claim[])
    if (!except.has(c.metadata.uid)) for (const r of allocatedDevices(c)) out.add(key(r));
  return out;
}

/** NoExecute taints on the claim's devices that its requests do not tolerate, with the eviction time each allows. */
export function evictionDue(claim: Claim, devices: readonly SliceDevice[]): number | undefined {
  const byKey = new Map(devices.map((d) => [key(d), d]));
  let due: number | undefined;
  for (const res of allocatedDevices(claim)) {
    const tols = claim.spec?.devices?.requests?.find((r) => r.name === res.request)?.exactly?.tolerations ?? [];
    for (const t of byKey.get(key(res))?.taints ?? []) {
      if (t.effect !== 'NoExecute') continue;
      const matching = tols.filter((tol) => toleratesTaint(tol, t as Taint));
      if (matching.some((tol) => tol.tolerationSeconds === undefined)) continue;
      // Tolerated for a while: evicted `tolerationSeconds` (the shortest) after the taint was added.
      const seconds = matching.length > 0 ? Math.max(0, Math.min(...matching.map((m) => m.tolerationSeconds!))) : 0;
      const at = (t.timeAdded ? Date.parse(t.timeAdded) : 0) + seconds * 1000;
      due = due === undefined ? at : Math.min(due, at);
    }
  }
  return due;
}
