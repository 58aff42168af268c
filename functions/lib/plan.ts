/**
 * What a function decided to do, as typed data (ARCHITECTURE.md "The reflex core"). A planner
 * returns `Actions`; `applyActions` (apply.ts) carries them out through the ports; event text,
 * chat text and logs are rendered from them. Nothing here is ever parsed back from a string.
 */
import type { NodeCondition, Taint, TaintEffect } from '../adapters/kube/model.ts';
import type { Notice } from '../adapters/chat/notifier.ts';
import type { Outbox } from './outbox.ts';
import type { DeviceRef, DeviceTaint, KubeEventNote } from '../adapters/kube/ports.ts';
import type { CloudAction } from '../adapters/cloud.ts';
import type { GpuActionSet } from './gpu-actions.ts';

// The types a plan shares with the ports that carry it out are declared with those ports (adapters
// import no kernel: test/contract/layers.test.ts) and named here too, where planners look for them.
export type { CloudAction, DeviceRef, DeviceTaint, KubeEventNote };

export type { Notice, Taint, TaintEffect };

/**
 * One node's change, sent as one patch. `record` is the function's own state for the node (for
 * remediation: the typed next history), encoded once by the applier's codec, at the port.
 */
export interface NodeEdit<R = never> {
  node: string;
  addTaints: Taint[];
  /** By key and effect; absent ones are ignored. */
  removeTaints: { key: string; effect: TaintEffect }[];
  /** `true` cordons, `false` uncordons, absent leaves it alone. */
  unschedulable?: boolean;
  /** A string sets, `null` removes. */
  labels: Record<string, string | null>;
  annotations: Record<string, string | null>;
  record?: R;
  /** Events and notices to send, written in this same patch (outbox.ts); empty clears the outbox. */
  outbox?: Outbox;
  /** A Node condition to set through `nodes/status` after the patch (where `kubectl describe node` shows it). */
  condition?: NodeCondition;
  /**
   * GPU actions for the node's agent (gpu-actions.ts): the owner's whole set, merged by the applier into
   * the node's request annotation in this same patch (so a request is written with the state that explains
   * it, or not at all), replacing only this owner's entries. Never written as an annotation by hand.
   */
  gpuActions?: GpuActionSet;
}

export interface PodRef {
  namespace: string;
  name: string;
  uid?: string;
}

/**
 * Cards of a node that shares its GPUs through ACK's gpushare, held out of its scheduler extender's
 * placement by ConfigMap `kube-system/unhealthy-gpu-<node>`, key `gpus` (adapters/kube/kube-card-fence-ops.ts).
 * Only these indices change: every other writer's entry stays.
 */
export interface CardFence {
  node: string;
  add: number[];
  remove: number[];
}

export interface Actions<R = never> {
  nodeEdit?: NodeEdit<R>;
  /** DRA DeviceTaintRules to create and delete (after the node change, before evictions). */
  deviceTaints?: { add: DeviceTaint[]; remove: { name: string; gpuUuid: string }[] };
  /** Card indices to list in, and take out of, ACK's gpushare ConfigMap of the node (with the device taints). */
  cardFences?: CardFence;
  evictions: PodRef[];
  notices: Notice[];
  cloud: CloudAction[];
  /**
   * Kubernetes Events to record on the edited node (`kubectl describe node` shows them beside the
   * kubelet's): what people on the node must see, such as a GPU fence that drifted. Never fails a plan.
   */
  nodeEvents?: KubeEventNote[];
  /**
   * Kubernetes Events to record on pods (`kubectl describe pod`): why a tenant's pod moved off a
   * shared GPU it did not break (issue #32). Recorded after the evictions; never fails a plan.
   */
  podEvents?: { pod: PodRef; note: KubeEventNote }[];
}

export function noActions<R = never>(): Actions<R> {
  return { evictions: [], notices: [], cloud: [] };
}

/** True when the edit changes the node's scheduling or what people see (not only our record). */
export function editsScheduling(e: NodeEdit<unknown> | undefined): boolean {
  if (!e) return false;
  return (
    e.addTaints.length > 0 ||
    e.removeTaints.length > 0 ||
    e.unschedulable !== undefined ||
    Object.keys(e.labels).length > 0
  );
}

export function emptyEdit<R>(node: string): NodeEdit<R> {
  return { node, addTaints: [], removeTaints: [], labels: {}, annotations: {} };
}

export function isEmptyEdit(e: NodeEdit<unknown>): boolean {
  return (
    !editsScheduling(e) &&
    Object.keys(e.annotations).length === 0 &&
    e.record === undefined &&
    e.outbox === undefined &&
    e.condition === undefined &&
    e.gpuActions === undefined
  );
}
