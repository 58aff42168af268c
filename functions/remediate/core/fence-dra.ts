/**
 * The DRA fence (pure): a cluster-scoped DeviceTaintRule (NoSchedule) on the GPU's device, as the
 * node's ResourceSlice of the policy's driver lists it; deleted on restore. Kubernetes docs,
 * "Device Taints and Tolerations" (resource.k8s.io; versions in policy-schema.ts FenceSchema).
 */
import type { DeviceTaint } from '../../lib/plan.ts';
import type { Policy } from './policy.ts';
import { fnv1a } from '../../lib/hash.ts';
import { isOpen, type Incident, type NodeState } from './state.ts';
import type { NodeFacts } from './types.ts';
import { backendOf, fenced } from './fence.ts';
import type { FenceCheck } from './fence-check.ts';
import type { FenceState } from './state.ts';

const MINUTE = 60_000;

/**
 * The DRA fence is our own object: verified once the DeviceTaintRule naming the GPU's device is
 * there. A GPU no ResourceSlice of the node lists cannot be named by a rule: the node is tainted at
 * once. DRA not read for this node (no DRA port in this deployment): waits, then falls back.
 */
export function checkDra(
  i: Incident,
  node: Pick<NodeFacts, 'name' | 'dra' | 'draUnserved'>,
  now: Date,
  policy: Pick<Policy, 'fence'>,
): FenceCheck {
  const f = i.fence!;
  const at = now.toISOString();
  const driver = policy.fence.dra.driver;
  // The cluster serves no DRA API (404): waiting cannot help, and meanwhile a claim could be given this GPU.
  if (!node.dra && node.draUnserved && f.fallback === undefined) {
    return {
      kind: 'fallback',
      incident: { ...i, fence: { ...f, fallback: 'not-verified', fallbackAt: at } },
      why:
        `${node.name}'s cluster serves no DRA API (ResourceSlices and DeviceTaintRules answer 404), so no ` +
        `DeviceTaintRule can hold ${i.gpu} out: the node is tainted NoSchedule instead, until the GPU is repaired`,
    };
  }
  if (node.dra && i.gpu && !node.dra.devices[i.gpu]) {
    return {
      kind: 'fallback',
      incident: { ...i, fence: { ...f, fallback: 'no-dra-device', fallbackAt: at } },
      why:
        `no ResourceSlice of ${node.name} lists ${i.gpu} under the DRA driver ${driver}, so no ` +
        `DeviceTaintRule can hold it out: the node is tainted NoSchedule instead, until the GPU is repaired`,
    };
  }
  const name = deviceTaintName(node.name, i.gpu ?? '');
  if (f.verifiedAt !== undefined) return heldRule(i, f, name, node, now, policy);
  if (node.dra?.rules.includes(name)) {
    const d = node.dra.devices[i.gpu!]!;
    return {
      kind: 'verified',
      incident: { ...i, fence: { ...f, verifiedAt: at } },
      why:
        `${i.gpu} is fenced: DeviceTaintRule ${name} (NoSchedule) holds out DRA device ` +
        `${d.driver}/${d.pool}/${d.device}`,
    };
  }
  if (now.getTime() - Date.parse(i.outAt ?? i.since) < policy.fence.verifyMinutes * MINUTE) return { kind: 'wait' };
  const seen = node.dra
    ? `DeviceTaintRule ${name} is not there`
    : 'DRA was not read for this node (no DeviceTaintRule access in this deployment)';
  return {
    kind: 'fallback',
    incident: { ...i, fence: { ...f, fallback: 'not-verified', fallbackAt: at } },
    why:
      `${i.gpu} was not fenced within ${policy.fence.verifyMinutes} min (dra: ${seen}): the node ` +
      `is tainted NoSchedule instead, until the GPU is repaired`,
  };
}

/**
 * A verified DRA fence, on a later sweep: a rule someone deleted is reported and created again by the
 * same plan (deviceTaintChange); still not listed `fence.verifyMinutes` later, the node is tainted.
 */
function heldRule(
  i: Incident,
  f: FenceState,
  name: string,
  node: Pick<NodeFacts, 'name' | 'dra'>,
  now: Date,
  policy: Pick<Policy, 'fence'>,
): FenceCheck {
  if (!node.dra) return { kind: 'wait' };
  const at = now.toISOString();
  if (node.dra.rules.includes(name)) {
    if (f.driftAt === undefined) return { kind: 'wait' };
    const { driftAt: _gone, ...rest } = f;
    return {
      kind: 'drift',
      incident: { ...i, fence: rest },
      why: `the fence of ${i.gpu} holds again: DeviceTaintRule ${name} is listed (it was missing from ${f.driftAt})`,
    };
  }
  if (f.driftAt === undefined)
    return {
      kind: 'drift',
      incident: { ...i, fence: { ...f, driftAt: at } },
      why: `the fence of ${i.gpu} no longer holds: DeviceTaintRule ${name} was deleted by someone; creating it again`,
    };
  if (now.getTime() - Date.parse(f.driftAt) < policy.fence.verifyMinutes * MINUTE) return { kind: 'wait' };
  return {
    kind: 'fallback',
    incident: { ...i, fence: { ...f, fallback: 'not-verified', fallbackAt: at } },
    why:
      `DeviceTaintRule ${name} for ${i.gpu} has been missing since ${f.driftAt} and could not be ` +
      `created again within ${policy.fence.verifyMinutes} min: the node is tainted NoSchedule ` +
      `instead, until the GPU is repaired`,
  };
}

/** The DeviceTaintRule gpu-reflex keeps for one GPU of one node: the same name on every redelivery. */
export function deviceTaintName(node: string, gpu: string): string {
  return `gpu-reflex-${fnv1a(node)}-${fnv1a(gpu)}`;
}

/** An incident whose GPU a DeviceTaintRule should hold out now. */
function draHeld(i: Incident): boolean {
  return isOpen(i) && fenced(i) && backendOf(i) === 'dra' && i.fence?.fallback === undefined && i.gpu !== undefined;
}

/**
 * The DeviceTaintRules the node should have for this state, against those it has: a rule for each
 * GPU a `dra` incident holds out (its device found in the node's ResourceSlices), none for the
 * rest. Undefined when nothing changes, or when DRA was not read for the node.
 */
export function deviceTaintChange(
  state: Pick<NodeState, 'incidents'>,
  node: Pick<NodeFacts, 'name' | 'dra'>,
  policy: Pick<Policy, 'taintKey'>,
): { add: DeviceTaint[]; remove: { name: string; gpuUuid: string }[] } | undefined {
  if (!node.dra) return undefined;
  const want = new Map<string, DeviceTaint>();
  for (const i of state.incidents) {
    if (!draHeld(i)) continue;
    const device = node.dra.devices[i.gpu!];
    if (!device) continue;
    const name = deviceTaintName(node.name, i.gpu!);
    const value = (i.xid !== undefined ? `xid-${i.xid}` : (i.condition ?? i.trigger))
      .replace(/[^A-Za-z0-9._-]/g, '-')
      .slice(0, 63);
    want.set(name, {
      ...device,
      name,
      node: node.name,
      gpuUuid: i.gpu!,
      taint: { key: policy.taintKey, value, effect: 'NoSchedule' },
    });
  }
  const have = new Set(node.dra.rules);
  const add = [...want.values()].filter((t) => !have.has(t.name));
  const gpuOf = new Map(state.incidents.filter((i) => i.gpu).map((i) => [deviceTaintName(node.name, i.gpu!), i.gpu!]));
  const remove = [...have]
    .filter((n) => !want.has(n))
    .sort()
    .map((name) => ({ name, gpuUuid: gpuOf.get(name) ?? 'unknown' }));
  return add.length > 0 || remove.length > 0 ? { add, remove } : undefined;
}

/** A closed `dra` incident's fence is lifted once its DeviceTaintRule is gone from the node. */
export function draLifted(i: Incident, node: Pick<NodeFacts, 'name' | 'dra'>, now: Date): Incident | undefined {
  if (isOpen(i) || !fenced(i) || i.unfencedAt || backendOf(i) !== 'dra' || !i.gpu || !node.dra) return undefined;
  if (i.fence?.fallback !== undefined) return { ...i, unfencedAt: now.toISOString() };
  return node.dra.rules.includes(deviceTaintName(node.name, i.gpu))
    ? undefined
    : { ...i, unfencedAt: now.toISOString() };
}
