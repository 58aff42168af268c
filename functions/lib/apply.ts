/**
 * applyActions: the one applier. Carries any plan's actions out through the ports, in this order:
 * the node change as one patch (a taint and a cordon stop new work before anything moves), the
 * DRA DeviceTaintRules (created, then deleted), ACK gpushare's card fence, then evictions (all at
 * once), notices, cloud actions. It checks no dry-run flag: dry-run is the ports' decorator,
 * chosen in the wiring.
 *
 * Failure meaning: the node patch throws (the invocation is retried; every action is idempotent);
 * a pod whose eviction fails is reported and left to the next round; a notice that fails is
 * reported and never fails anything; a cloud action without a cloud port is reported skipped, and
 * so is a device taint without a DRA port (the fence check then falls back to a node taint). A
 * device-taint call that fails throws, like the node patch: the fence must not be half-applied.
 *
 * GPU actions (`NodeEdit.gpuActions`, gpu-actions.ts) ride in the node's one patch, merged into the
 * request annotation against the node as read: the caller's `basis` (a 409 then reaches the caller, whose
 * plan was made from that read), or else the applier's own read, read again and merged again on a 409.
 */
import type { Notifier } from '../adapters/chat/notifier.ts';
import type { CloudOps } from '../adapters/cloud.ts';
import type { NodeInfo } from '../adapters/kube/model.ts';
import type { NodeChange } from '../adapters/kube/node-change.ts';
import { evictionsNote } from '../adapters/kube/event-notes.ts';
import type { CardFenceOps, DeviceTaintOps, EventRecorder, NodeOps, PodOps } from '../adapters/kube/ports.ts';
import { ConflictError } from '../adapters/errors.ts';
import { DEFAULT_CONFLICT_ATTEMPTS } from '../adapters/kube/retry.ts';
import { GPU_ACTIONS_ANNOTATION } from '../../events/index.ts';
import { mergeGpuActions } from './gpu-actions.ts';
import { encodeOutbox, OUTBOX_ANNOTATION } from './outbox.ts';
import type { Actions, NodeEdit } from './plan.ts';

/** The applier's cloud port, declared with the adapters (adapters/cloud.ts). */
export type { CloudOps };

export interface StepOutcome {
  result: 'done' | 'already' | 'blocked' | 'failed' | 'skipped';
  message?: string;
  /** The cloud's task for an asynchronous action (ACK's task id), to follow it. */
  taskId?: string;
}

/** What happened to each action, index for index. */
export interface Applied {
  nodeEdit?: StepOutcome;
  /** `deviceTaints.add` then `deviceTaints.remove`, index for index. */
  deviceTaints?: StepOutcome[];
  /** The one change of `cardFences`. */
  cardFences?: StepOutcome;
  evictions: StepOutcome[];
  notices: StepOutcome[];
  cloud: StepOutcome[];
}

export interface ActionPorts {
  /** `get`: read by the applier only to merge GPU actions into a node no `basis` was given for. */
  nodes: Pick<NodeOps, 'update' | 'setCondition'> & Partial<Pick<NodeOps, 'get'>>;
  pods: Pick<PodOps, 'evict'>;
  notifier: Notifier;
  cloud?: CloudOps;
  /** DRA DeviceTaintRules; absent where the deployment has no resource.k8s.io access. */
  deviceTaints?: Pick<DeviceTaintOps, 'create' | 'remove'>;
  /** ACK gpushare's unhealthy-card ConfigMaps; absent where the deployment has no access to them. */
  cardFences?: Pick<CardFenceOps, 'change'>;
  /** Kubernetes Events: the accepted evictions as one Event on the node (event-notes.ts). */
  events?: EventRecorder;
}

/** Encodes a function's typed node record into the metadata it is stored in. */
export type RecordCodec<R> = (record: R) => {
  labels?: Record<string, string | null>;
  annotations?: Record<string, string | null>;
};

const clip = (s: string) => s.slice(0, 512);

/**
 * `basis`: the node as the caller read it (under its lease) when planning: the patch is computed
 * from it and sent with its resourceVersion, one request; a node changed since is a 409 (retried).
 */
export async function applyActions<R>(
  actions: Actions<R>,
  ports: ActionPorts,
  codec?: RecordCodec<R>,
  basis?: NodeInfo,
): Promise<Applied> {
  const applied: Applied = { evictions: [], notices: [], cloud: [] };
  if (actions.nodeEdit) {
    const changed = await updateNode(
      actions.nodeEdit,
      ports.nodes,
      codec,
      basis?.name === actions.nodeEdit.node ? basis : undefined,
    );
    // The condition rides on nodes/status, a second request: only when the edit has one.
    const condition = actions.nodeEdit.condition
      ? await ports.nodes.setCondition(actions.nodeEdit.node, actions.nodeEdit.condition)
      : false;
    applied.nodeEdit = { result: changed || condition ? 'done' : 'already' };
  }
  if (actions.deviceTaints) {
    const dra = ports.deviceTaints;
    const out: StepOutcome[] = [];
    for (const t of actions.deviceTaints.add) {
      out.push(
        dra
          ? { result: (await dra.create(t)) ? 'done' : 'already' }
          : { result: 'skipped', message: `no DRA access to create DeviceTaintRule ${t.name}` },
      );
    }
    for (const t of actions.deviceTaints.remove) {
      out.push(
        dra
          ? { result: (await dra.remove(t.name)) ? 'done' : 'already' }
          : { result: 'skipped', message: `no DRA access to delete DeviceTaintRule ${t.name}` },
      );
    }
    applied.deviceTaints = out;
  }
  if (actions.cardFences) {
    const { node, add, remove } = actions.cardFences;
    // Like a device taint, a failed write throws: the fence must not be half-applied.
    applied.cardFences = ports.cardFences
      ? { result: (await ports.cardFences.change(node, add, remove)) ? 'done' : 'already' }
      : { result: 'skipped', message: `no access to ConfigMap kube-system/unhealthy-gpu-${node}` };
  }
  const about = actions.nodeEdit?.node ?? basis?.name;
  if (about && ports.events)
    for (const e of actions.nodeEvents ?? []) await ports.events.record({ kind: 'Node', name: about }, e);
  // Concurrently, as kubectl drain evicts: each eviction is its own answer (a budget's refusal is
  // per pod), and a node's pods leave sooner. Outcomes stay index for index.
  applied.evictions = await Promise.all(
    actions.evictions.map(async (pod): Promise<StepOutcome> => {
      try {
        const r = await ports.pods.evict(pod.namespace, pod.name, pod.uid === undefined ? {} : { uid: pod.uid });
        return r.outcome === 'blocked'
          ? { result: 'blocked', message: clip(r.reason) }
          : { result: r.outcome === 'gone' ? 'already' : 'done' };
      } catch (err) {
        return { result: 'failed', message: clip((err as Error).message) };
      }
    }),
  );
  // The evictions are about the node being edited (or read as the plan's basis); recording never throws.
  const evicted = actions.evictions
    .filter((_, i) => applied.evictions[i]?.result === 'done')
    .map((p) => `${p.namespace}/${p.name}`);
  const node = actions.nodeEdit?.node ?? basis?.name;
  if (evicted.length > 0 && node && ports.events)
    await ports.events.record({ kind: 'Node', name: node }, evictionsNote(evicted));
  if (ports.events)
    for (const { pod, note } of actions.podEvents ?? [])
      await ports.events.record(
        { kind: 'Pod', name: pod.name, namespace: pod.namespace, ...(pod.uid ? { uid: pod.uid } : {}) },
        note,
      );
  for (const notice of actions.notices) {
    try {
      await ports.notifier.notify(notice);
      applied.notices.push({ result: 'done' });
    } catch (err) {
      applied.notices.push({ result: 'failed', message: clip((err as Error).message) });
    }
  }
  for (const action of actions.cloud) {
    if (!ports.cloud) {
      applied.cloud.push({
        result: 'skipped',
        message: `no cloud adapter to ${action.kind} ${'node' in action ? action.node : action.pool}: a person must`,
      });
      continue;
    }
    const r = await ports.cloud.run(action);
    const o = typeof r === 'boolean' ? { done: r } : r;
    applied.cloud.push({
      result: o.done ? 'done' : 'already',
      ...(o.message ? { message: clip(o.message) } : {}),
      ...(o.taskId ? { taskId: o.taskId } : {}),
    });
  }
  return applied;
}

/**
 * The node edit as one patch. With GPU actions and no basis, the node is read here and the patch sent
 * against that read; a 409 (someone wrote the node in between: another owner's GPU actions, say) reads
 * and merges again, up to DEFAULT_CONFLICT_ATTEMPTS times, so no owner's entry is ever lost.
 */
async function updateNode<R>(
  edit: NodeEdit<R>,
  nodes: ActionPorts['nodes'],
  codec: RecordCodec<R> | undefined,
  basis: NodeInfo | undefined,
): Promise<boolean> {
  // One write path: against the basis (one try; a 409 is the caller's), or against a fresh read, read again on a 409.
  const reread = edit.gpuActions !== undefined && !basis;
  if (reread && !nodes.get)
    throw new Error(`GPU actions for node ${edit.node}: the applier needs the node as read (a basis)`);
  let last: ConflictError | undefined;
  for (let i = 0; i < (reread ? DEFAULT_CONFLICT_ATTEMPTS : 1); i++) {
    const read = reread ? await nodes.get!(edit.node) : basis;
    try {
      return await nodes.update(
        edit.node,
        toNodeChange(edit, codec, read?.annotations),
        read ? { basis: read } : undefined,
      );
    } catch (err) {
      if (!reread || !(err instanceof ConflictError)) throw err;
      last = err;
    }
  }
  throw new ConflictError(`merging GPU actions into node ${edit.node}: still conflicting`, {
    what: `node ${edit.node}`,
    status: 409,
    cause: last,
  });
}

/**
 * The port's one-patch change. The record, the outbox and the GPU actions are encoded here, once; a
 * record without a codec is our bug, and so are GPU actions without the node's current annotations
 * (`current`: the node as read, which the owner's set is merged into) or written as a bare annotation.
 */
export function toNodeChange<R>(
  edit: NodeEdit<R>,
  codec?: RecordCodec<R>,
  current?: Readonly<Record<string, string>>,
): NodeChange {
  let labels = edit.labels;
  let annotations = edit.annotations;
  if (edit.record !== undefined) {
    if (!codec) throw new Error(`node edit for ${edit.node} carries a record but no codec was given`);
    const enc = codec(edit.record);
    labels = { ...labels, ...enc.labels };
    annotations = { ...annotations, ...enc.annotations };
  }
  if (edit.outbox !== undefined) annotations = { ...annotations, [OUTBOX_ANNOTATION]: encodeOutbox(edit.outbox) };
  // Only the merge writes the request channel: a bare value would rewrite every other owner's requests.
  if (GPU_ACTIONS_ANNOTATION in annotations)
    throw new Error(`node edit for ${edit.node} writes ${GPU_ACTIONS_ANNOTATION} itself: use NodeEdit.gpuActions`);
  if (edit.gpuActions !== undefined) {
    if (!current) throw new Error(`GPU actions for node ${edit.node} need the node's annotations as read`);
    const merged = mergeGpuActions(current[GPU_ACTIONS_ANNOTATION], edit.gpuActions, edit.node);
    annotations = { ...annotations, [GPU_ACTIONS_ANNOTATION]: merged };
  }
  return {
    ...(edit.addTaints.length ? { addTaints: edit.addTaints } : {}),
    ...(edit.removeTaints.length ? { removeTaints: edit.removeTaints } : {}),
    ...(Object.keys(labels).length ? { labels } : {}),
    ...(Object.keys(annotations).length ? { annotations } : {}),
    ...(edit.unschedulable !== undefined ? { unschedulable: edit.unschedulable } : {}),
  };
}
