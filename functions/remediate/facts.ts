/**
 * Fetching what the planner decides from: the node, its pods, its pool. The only reads the
 * remediation handler and the sweep make, each through the narrow ports it needs; everything after
 * is the pure planner.
 */
import type { NodeInfo, NodeMeta, PodInfo } from '../adapters/kube/model.ts';
import { MIRROR_POD_ANNOTATION, requestsGpu } from '../adapters/kube/model.ts';
import type { CardFenceOps, DeviceTaintOps, NodeOps, PodOps } from '../adapters/kube/ports.ts';
import { gpushareCards } from '../adapters/kube/gpushare.ts';
import { fenceBackendFor } from './core/fence-cgpu.ts';
import { ForbiddenError, NotFoundError } from '../adapters/errors.ts';
import { fenceBackendOf, poolOf, type Policy } from './core/policy.ts';
import { OUT_OF_SERVICE, poolFacts } from './core/blast-radius.ts';
import {
  emptyState,
  isOpen,
  parseNodeState,
  stateOf,
  STATE_LABEL,
  type NodePhase,
  type NodeState,
} from './core/state.ts';
import type { Capabilities, NodeFacts, PodFacts, PoolFacts, ReplaceFacts } from './core/types.ts';
import type { SweepNodeFacts } from './core/sweep.ts';
import { needsReplaceFacts } from './core/replace.ts';
import type { ReplacementRecord } from '../lib/replacements.ts';
import type { Clock } from '../adapters/clock.ts';
import type { Logger } from '../adapters/logger.ts';

export { requestsGpu, stateOf };

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

/**
 * The pool a node belongs to and who in it is out, or came back, within the window (from each
 * member's state). The ledger (ledger.ts) adds those taken out by invocations running right now.
 * Members come from a metadata-only list: the pool's size and each member's state label and
 * history annotation are all the count needs (taints and the cordon only matter for the node
 * being remediated, read in full). Measured on the 1,500-node storm, the full list was the
 * largest single cost: ~100 whole nodes serialized, parsed and deserialized per invocation.
 */
export async function fetchPoolFacts(
  nodes: Pick<NodeOps, 'listMetadata'>,
  policy: Policy,
  node: NodeInfo,
  now: Date,
): Promise<PoolFacts> {
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
 * What a read port told last: a cluster that does not serve DRA, or a role that may not read it, answers the
 * same for every node every minute, and a warning a node a minute says nothing new. Kept per port object (the
 * wiring makes one a process; a test one a test): told again when the answer changes (404 → 403) or comes back after
 * a read through the port succeeded.
 */
const told = new WeakMap<object, string>();
function tellOnce(port: object, what: string, say: () => void): void {
  if (told.get(port) === what) return;
  told.set(port, what);
  say();
}
const forget = (port: object) => told.delete(port);

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
    forget(ops);
    return { devices, rules };
  } catch (err) {
    if (!(err instanceof NotFoundError || err instanceof ForbiddenError)) throw err;
    tellOnce(ops, err instanceof NotFoundError ? 'not served' : 'refused', () =>
      warn(
        "DRA not readable: GPU fences of the pool's nodes fall back to a node taint (said once until a read succeeds)",
        { node: node.name, error: (err as Error).message },
      ),
    );
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
    const listed = await ops.listed(node.name);
    forget(ops);
    return { listed };
  } catch (err) {
    if (!(err instanceof ForbiddenError)) throw err;
    tellOnce(ops, 'refused', () =>
      warn(
        "gpushare's unhealthy-gpu ConfigMap not readable: card fences fall back to a node taint " +
          '(said once until a read succeeds)',
        { node: node.name, error: (err as Error).message },
      ),
    );
    return undefined;
  }
}

/**
 * The node's pods that still run or will: terminating pods are leaving, and finished ones
 * (Succeeded, Failed) hold no GPU, so neither is a pod to move or to wait for (a GPU whose work
 * was left to finish is reset once its pods are done).
 */
export async function podsOf(pods: Pick<PodOps, 'listOnNode'>, node: string): Promise<PodFacts[]> {
  return (await pods.listOnNode(node))
    .filter((p) => !p.terminating && p.phase !== 'Succeeded' && p.phase !== 'Failed')
    .map(podFacts);
}

/** Who repairs a node, and whether the cloud reaches it: the deployment's word on each node. */
export interface RepairPorts {
  /** What the deployment's cloud adapter can do. */
  capabilities?: Capabilities;
  /** Another controller that repairs this node (its pool's ACK auto repair): gpu-reflex defers to it. */
  repairOwner?: (node: NodeInfo) => Promise<string | undefined>;
  /** Why the cloud cannot reach this node (no ECS instance behind it), or undefined when it can. */
  unreachable?: (node: NodeInfo) => string | undefined;
}

/**
 * The capabilities for one node: the deployment's, unless the node's pool repairs its nodes itself,
 * or the cloud cannot reach the node (a person repairs it, and is told why).
 */
export async function capabilitiesFor(ports: RepairPorts, node: NodeInfo): Promise<Capabilities | undefined> {
  const owner = await ports.repairOwner?.(node);
  if (owner) return { ...ports.capabilities, reboot: false, replace: false, repairOwner: owner };
  const unreachable = ports.capabilities?.reboot || ports.capabilities?.replace ? ports.unreachable?.(node) : undefined;
  return unreachable ? { ...ports.capabilities, reboot: false, replace: false, unreachable } : ports.capabilities;
}

/** The reads the sweep makes for one tracked node, and no more. */
export interface SweepFactPorts extends RepairPorts {
  nodes: Pick<NodeOps, 'listMetadata'>;
  pods: Pick<PodOps, 'listOnNode'>;
  deviceTaints?: DeviceTaintOps;
  cardFences?: CardFenceOps;
  /** A replacement's facts: its node pool and the removal's task (replacements.ts). */
  replacements?: {
    facts(node: NodeInfo, record: ReplacementRecord | undefined, claimed: ReadonlySet<string>): Promise<ReplaceFacts>;
  };
  clock: Pick<Clock, 'now'>;
  logger: Pick<Logger, 'warn'>;
}

/**
 * Everything the sweep decides one tracked node from, read in a fixed order: its pool (once a round:
 * `pools` keeps what was read), its state (parsed from the node as listed: no read), its DRA devices and
 * rules, its gpushare cards, who repairs it, its replacement (read only where this round may start or move
 * one: a drain's every sweep would cost ACK a call; `records`: the replacements on record, so new nodes
 * already claimed are not claimed twice), its pods.
 */
export async function sweepNodeFacts(
  ports: SweepFactPorts,
  policy: Policy,
  n: NodeInfo,
  round: { pools: Map<string, PoolFacts>; records: ReadonlyMap<string, ReplacementRecord> },
): Promise<SweepNodeFacts> {
  const warn = (m: string, f: Record<string, unknown>) => ports.logger.warn(m, f);
  const key = poolOf(policy, n.labels);
  const pool = round.pools.get(key) ?? (await fetchPoolFacts(ports.nodes, policy, n, new Date(ports.clock.now())));
  round.pools.set(key, pool);
  const state = stateOf(n, policy.taintKey);
  const dra = await draFacts(ports.deviceTaints, policy, n, warn);
  const cards = await cardFacts(ports.cardFences, policy, n, warn);
  const owned = ports.repairOwner || ports.unreachable ? await capabilitiesFor(ports, n) : undefined;
  const atReplace =
    ports.replacements && !owned?.repairOwner && state.incidents.some((i) => isOpen(i) && needsReplaceFacts(i));
  const records = [...round.records.values()];
  const claimed = new Set(records.filter((r) => r.node !== n.name && r.newNode).map((r) => r.newNode!));
  const replace = atReplace ? await ports.replacements!.facts(n, round.records.get(n.name), claimed) : undefined;
  return {
    node: nodeFacts(n, dra, cards),
    state,
    pool,
    pods: await podsOf(ports.pods, n.name),
    ...(owned ? { capabilities: owned } : {}),
    ...(replace ? { replace } : {}),
  };
}
