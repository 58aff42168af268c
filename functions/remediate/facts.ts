/**
 * Fetching what the planner decides from: the node, its pods, its pool. The only reads the
 * remediation handler makes; everything after is the pure planner.
 */
import type { NodeInfo, NodeMeta, PodInfo } from '../adapters/kube/model.ts';
import { MIRROR_POD_ANNOTATION, requestsGpu } from '../adapters/kube/model.ts';
import type { CardFenceOps, DeviceTaintOps, NodeOps, PodOps } from '../adapters/kube/ports.ts';
import { gpushareCards } from '../adapters/kube/gpushare.ts';
import { fenceBackendFor } from './core/fence-cgpu.ts';
import { ForbiddenError, NotFoundError } from '../adapters/errors.ts';
import { fenceBackendOf, poolOf, type Policy } from './core/policy.ts';
import { OUT_OF_SERVICE, poolFacts } from './core/blast-radius.ts';
import { emptyState, parseNodeState, STATE_LABEL, type NodePhase, type NodeState } from './core/state.ts';
import type { NodeFacts, PodFacts, PoolFacts } from './core/types.ts';

export { requestsGpu };

export function nodeFacts(n: NodeInfo, dra?: NodeFacts['dra'] | 'unserved', cards?: NodeFacts['cards']): NodeFacts {
  return {
    ...(dra === 'unserved' ? { draUnserved: true as const } : dra ? { dra } : {}),
    ...(cards ? { cards } : {}),
    name: n.name,
    labels: n.labels,
    annotations: n.annotations,
    taints: n.taints,
    unschedulable: n.unschedulable,
    ...(n.conditions ? { conditions: n.conditions } : {}),
    ...(n.capacity ? { capacity: n.capacity, allocatable: n.allocatable } : {}),
    ...(n.bootId ? { bootId: n.bootId } : {}),
    ...(n.ready !== undefined ? { ready: n.ready } : {}),
  };
}

export function podFacts(p: PodInfo): PodFacts {
  const cards = gpushareCards(p.annotations);
  return {
    ...(cards ? { cards } : {}),
    namespace: p.namespace,
    name: p.name,
    uid: p.uid,
    requestsGpu: requestsGpu(p),
    daemonSet: p.owners.some((o) => o.kind === 'DaemonSet'),
    mirror: MIRROR_POD_ANNOTATION in p.annotations,
    labels: p.labels,
  };
}

export function stateOf(n: NodeInfo, taintKey?: string): NodeState {
  return parseNodeState(n.annotations, n.labels, n.taints, {
    unschedulable: n.unschedulable,
    ...(taintKey ? { taintKey } : {}),
  });
}

/**
 * The pool a node belongs to and who in it is out, or came back, within the window (from each
 * member's state). The ledger (ledger.ts) adds those taken out by invocations running right now.
 * Members come from a metadata-only list: the pool's size and each member's state label and
 * history annotation are all the count needs (taints and the cordon only matter for the node
 * being remediated, read in full). Measured on the 1,500-node storm, the full list was the
 * largest single cost: ~100 whole nodes serialized, parsed and deserialized per invocation.
 */
export async function fetchPoolFacts(nodes: NodeOps, policy: Policy, node: NodeInfo, now: Date): Promise<PoolFacts> {
  const name = poolOf(policy, node.labels);
  const label = policy.poolLabels.find((l) => node.labels[l] === name);
  // Nodes with no pool label form the `default` pool together.
  const members = label
    ? await nodes.listMetadata(`${label}=${name}`)
    : (await nodes.listMetadata()).filter((m) => poolOf(policy, m.labels) === name);
  return poolFacts(
    policy,
    name,
    members.map((m) => ({ name: m.name, state: memberState(m) })),
    now,
  );
}

/**
 * A pool member's state as the count reads it: phase (label) and incidents (history annotation).
 * A member whose label already says it is out counts whatever its history holds, so its history is
 * not parsed: in a storm those are the members that carry one, and each remediation of the pool
 * parsed all of them again.
 */
function memberState(m: NodeMeta): NodeState {
  const phase = m.labels[STATE_LABEL] as NodePhase | undefined;
  if (phase !== undefined && OUT_OF_SERVICE.has(phase)) return { ...emptyState(), phase };
  return parseNodeState(m.annotations, m.labels, [], {});
}

/**
 * The node's DRA devices and gpu-reflex's DeviceTaintRules for it, read only where the node's pool
 * fences by `dra` and the deployment has the port. An API the cluster does not serve (404) is
 * `unserved`: no rule can ever fence there, so the fence check falls back to a node taint at once
 * (found by the 1.32 simulator: waiting let a new claim be allocated the faulty GPU). One it does not
 * let us read (403) is a warning and no reading: the check falls back after `fence.verifyMinutes`.
 * Anything else throws (retried).
 */
export async function draFacts(
  ops: DeviceTaintOps | undefined,
  policy: Policy,
  node: NodeInfo,
  warn: (message: string, fields: Record<string, unknown>) => void,
): Promise<NodeFacts['dra'] | 'unserved'> {
  if (!ops || fenceBackendOf(policy, poolOf(policy, node.labels)) !== 'dra') return undefined;
  try {
    const [devices, rules] = await Promise.all([ops.devices(node.name, policy.fence.dra.driver), ops.rules(node.name)]);
    return { devices, rules };
  } catch (err) {
    if (!(err instanceof NotFoundError || err instanceof ForbiddenError)) throw err;
    warn("DRA not readable: this node's GPU fences fall back to a node taint", {
      node: node.name,
      error: (err as Error).message,
    });
    return err instanceof NotFoundError ? 'unserved' : undefined;
  }
}

/**
 * The card indices ACK gpushare's ConfigMap lists for the node, read only where the node shares its
 * GPUs and its fence backend is `ack-cgpu` (fence-cgpu.ts), and the deployment has the port. Not
 * allowed to read it (403): a warning and no reading, so the fence falls back to a node taint after
 * `fence.verifyMinutes`. Anything else throws (retried).
 */
export async function cardFacts(
  ops: CardFenceOps | undefined,
  policy: Policy,
  node: NodeInfo,
  warn: (message: string, fields: Record<string, unknown>) => void,
): Promise<NodeFacts['cards']> {
  if (!ops || fenceBackendFor(policy, poolOf(policy, node.labels), node) !== 'ack-cgpu') return undefined;
  try {
    return { listed: await ops.listed(node.name) };
  } catch (err) {
    if (!(err instanceof ForbiddenError)) throw err;
    warn("gpushare's unhealthy-gpu ConfigMap not readable: this node's card fences fall back to a node taint", {
      node: node.name,
      error: (err as Error).message,
    });
    return undefined;
  }
}

/**
 * The node's pods that still run or will: terminating pods are leaving, and finished ones
 * (Succeeded, Failed) hold no GPU, so neither is a pod to move or to wait for (a GPU whose work
 * was left to finish is reset once its pods are done).
 */
export async function podsOf(pods: PodOps, node: string): Promise<PodFacts[]> {
  return (await pods.listOnNode(node))
    .filter((p) => !p.terminating && p.phase !== 'Succeeded' && p.phase !== 'Failed')
    .map(podFacts);
}
