/**
 * The facts the remediation core decides from, and the plan it returns. Both are plain data: the
 * handler fetches the facts (node, pods, pool counts) and carries the plan out through adapters.
 */
import type { EscalationProgress } from './escalation.ts';
import type {
  GPU_HEALTH_CHANGED,
  GPU_XID_ERROR,
  GpuHealthChangedDetail,
  GpuXidErrorDetail,
  HealthCondition,
  REMEDIATION_PHASES,
  RemediationAction,
} from '../../../events/index.ts';
import type { Actions, DeviceRef } from '../../lib/plan.ts';
import type { GpuAction } from '../../lib/gpu-actions.ts';
import type { NodeState, Taint } from './state.ts';

export type TriggerEvent =
  | { detailType: typeof GPU_XID_ERROR; detail: GpuXidErrorDetail }
  | { detailType: typeof GPU_HEALTH_CHANGED; detail: GpuHealthChangedDetail }
  | { detailType: typeof OPERATOR_REQUEST; detail: OperatorRequestDetail };

/**
 * A person asked for a GPU quarantine (chat `quarantine NODE GPU`). Planned and applied as
 * remediation's own quarantine-gpu (same blast radius, fence, reset, probe and restore); it is
 * not an agent's observation, so no policy rule, no escalation and no XID or condition.
 */
export const OPERATOR_REQUEST = 'Operator Request';
export interface OperatorRequestDetail {
  eventId: string;
  node: string;
  /** When the person asked. */
  observedAt: string;
  /** The index is known only where the node lists its GPUs (the agent's MIG inventory). */
  gpu: { uuid: string; index?: number };
  action: 'quarantine-gpu';
  /** `platform:id` of who asked. */
  by: string;
  pods?: undefined;
  mig?: undefined;
}

export interface NodeFacts {
  name: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  taints: Taint[];
  unschedulable: boolean;
  /** GPU UUIDs on the node when known (inventory); lets a full per-GPU quarantine taint the node. */
  gpus?: string[];
  /** Node conditions by type (gpu-reflex keeps GpuReflexGpuFenced current). */
  conditions?: Record<string, { status: string; message: string }>;
  /**
   * `status.capacity` / `status.allocatable` (quantities as written): a device plugin's fence shows as the
   * difference.
   */
  capacity?: Record<string, string>;
  allocatable?: Record<string, string>;
  /**
   * DRA, read only for nodes whose pool fences by `dra`: the node's devices of the policy's
   * driver by GPU UUID (its ResourceSlices), and the names of gpu-reflex's DeviceTaintRules
   * for the node.
   */
  dra?: { devices: Record<string, DeviceRef>; rules: string[] };
  /**
   * The cluster answered 404 for the DRA kinds (it serves no resource.k8s.io version with ResourceSlices and
   * DeviceTaintRules, e.g. 1.32 with DRA off): no DeviceTaintRule can ever fence here (fence-dra.ts falls back
   * at once).
   */
  draUnserved?: true;
  /**
   * ACK gpushare, read only for nodes that share their GPUs (fence-cgpu.ts): the card indices
   * ConfigMap `kube-system/unhealthy-gpu-<node>` lists. Absent: not read (no access), never "none".
   */
  cards?: { listed: number[] };
  /** `status.nodeInfo.bootID`: a reboot shows as a new one. */
  bootId?: string;
  /** The Ready condition (undefined: the node reports none). */
  ready?: boolean;
}

export interface PodFacts {
  namespace: string;
  name: string;
  uid: string;
  /** GPU UUIDs allocated to the pod, when known (device plugin / pod resources API). */
  gpus?: string[];
  /** MIG device UUIDs allocated to the pod, when known. */
  migInstances?: string[];
  /** ACK gpushare: the card indices its scheduler extender gave the pod (adapters/kube/gpushare.ts). */
  cards?: number[];
  requestsGpu: boolean;
  daemonSet: boolean;
  /** Static (mirror) pods cannot be evicted through the API. */
  mirror: boolean;
  /** The pod's labels, when read (finding NVIDIA's device plugin pod on the node). */
  labels?: Record<string, string>;
}

export interface PoolFacts {
  name: string;
  nodes: number;
  /** Nodes of the pool taken out of service within the blast-radius window (this one excluded or not). */
  quarantinedInWindow: number;
  quarantinedNodes: string[];
}

/** What the handler can carry out beyond Kubernetes. Without a cloud adapter, repair waits for a person. */
export interface Capabilities {
  reboot?: boolean;
  replace?: boolean;
  /**
   * Another controller repairs this node (ACK's managed auto repair of its node pool): gpu-reflex
   * reboots and replaces nothing itself, and watches for the node's return (a new boot id, Ready),
   * as after a reboot of its own. The words name it.
   */
  repairOwner?: string;
  /**
   * Why the cloud cannot reboot or replace this node although the deployment's adapter can others
   * (it names no ECS instance: a registered IDC node, another provider's): a person repairs it.
   */
  unreachable?: string;
}

/**
 * What a replacement needs to know about the node's ACK node pool (read only for a node whose
 * incident is at replace-node): the pool's size and bound, its other nodes, and the removal's task.
 */
export interface ReplaceFacts {
  /** Why gpu-reflex may not replace this node through its pool (a person must); unset when it may. */
  refused?: string;
  /** The pool: its desired size now and the most nodes the autoscaler's policy allows it. */
  pool?: { id: string; name: string; desired: number; max: number };
  /** The node's ECS instance (its providerID). */
  instanceId?: string;
  /** The pool's other nodes; one created after the grow, Ready and not held, is the new capacity. */
  members: { name: string; createdAt?: string; ready: boolean; held: boolean }[];
  /**
   * The removal's ACK task (RemoveNodePoolNodes), once one was asked for and recorded; `unknown` with ACK's word
   * (`raw`) when DescribeTaskInfo answers a state ACK does not document; `taskId`: the task, to name to a person.
   */
  removal?: { state: 'running' | 'success' | 'failed' | 'unknown'; raw?: string; error?: string; taskId?: string };
}

export interface RemediationFacts {
  now: Date;
  event: TriggerEvent;
  node: NodeFacts;
  state: NodeState;
  pool: PoolFacts;
  pods: PodFacts[];
  capabilities?: Capabilities;
  /**
   * The pool's ledger refused this node a slot: a concurrent remediation took the last one since
   * the pool was read. The planner then holds the plan back for approval, as the blast radius would.
   */
  slotDenied?: boolean;
  /** A person approved this incident in chat: the blast-radius limit no longer holds it back. */
  approved?: boolean;
}

export type RemediationPhase = (typeof REMEDIATION_PHASES)[number];
export type Scope = 'mig-instance' | 'gpu' | 'node';

export interface PlanTarget {
  node: string;
  gpus: string[];
  migInstances: { gpuUuid: string; gpuInstanceId: number; computeInstanceId?: number }[];
  pods: { namespace: string; name: string; uid: string }[];
}

export interface PlanTrigger {
  eventId: string;
  detailType: string;
  node: string;
  gpuUuid?: string;
  xid?: number;
  condition?: HealthCondition;
  observedAt: string;
}

/**
 * What to do, as typed data: the node edit (its `record` is `nextState`, encoded by the applier),
 * evictions, notices, cloud actions, and for `approval` plans the question for a person. `noop`
 * plans change nothing but the history; `approval` plans change nothing but the history and the
 * state label, and carry a notice. Event text is rendered from this (detail.ts).
 */
export interface Plan extends Actions<NodeState> {
  kind: 'act' | 'noop' | 'approval';
  incident: string;
  action: RemediationAction | 'restore';
  scope: Scope;
  phase: RemediationPhase;
  target: PlanTarget;
  reason: string;
  trigger: PlanTrigger;
  nextState: NodeState;
  /** The policy profile that decided (policy `profiles`), when one did: said on the Remediation event. */
  profile?: string;
  /** Approval plans: what a person is asked to approve. */
  approval?: { summary: string };
  /** A repeat that did not (yet) escalate: how far it is toward the next rung. */
  escalation?: EscalationProgress;
  /**
   * GPU actions this plan newly asks of the node agent, for its steps and events (the node edit's
   * `gpuActions` carries remediation's whole set, which the applier merges into the node's requests).
   */
  gpuActions?: GpuAction[];
}
