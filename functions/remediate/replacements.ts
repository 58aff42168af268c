/**
 * Replacements under way, outside the node (core/replace.ts decides them). The node's history
 * leaves with the node, so each replacement is also kept in the state ConfigMap (key
 * `replace.<node>`), where
 * - the sweep finds the removal's ACK task id (the applier's answer, recorded after acting) and,
 *   once the node is gone, closes the incident with its last Remediation event;
 * - autoscale-pools sees that a pool is being replaced into (`replacementsByPool`): it gives back
 *   none of the pool's nodes meanwhile, and a new node's idle time starts only after.
 * The record is written before the cloud is asked (an intent: a crash after the call still leaves
 * it to follow) and deleted once the incident is closed or no longer replacing.
 */
import type { Json } from '../adapters/kube/model.ts';
import type { NodeInfo } from '../adapters/kube/model.ts';
import type { NodeOps, StateStore } from '../adapters/kube/ports.ts';
import { instanceIdOf } from '../adapters/alicloud/repair.ts';
import { NODEPOOL_LABEL, type CloudPools } from '../adapters/alicloud/ports.ts';
import { NotFoundError } from '../adapters/errors.ts';
import type { Applied } from '../lib/apply.ts';
import { emptyState, isOpen, STATE_LABEL, type NodeState } from './core/state.ts';
import type { Plan, ReplaceFacts } from './core/types.ts';
import { REPLACEMENT_KEY_PREFIX, type ReplacementRecord } from '../lib/replacements.ts';

const keyOf = (node: string) => `${REPLACEMENT_KEY_PREFIX}${node}`;

/** True when a replacement step is in the plan (the record goes with it). */
const replacing = (p: Plan | undefined): boolean => p?.cloud.some((c) => c.kind === 'replace') ?? false;

/**
 * Carries out a node's plan (`act`), keeping the record of a replacement it decides: on record before the cloud is
 * asked (an intent: a crash after the call still leaves it to follow), and the removal's task id once the applier
 * answered it. A plan that replaces nothing is only carried out.
 */
export async function withReplacementNoted<T extends { applied: Applied }>(
  state: StateStore,
  p: Plan | undefined,
  act: () => Promise<T>,
): Promise<T> {
  if (!p || !replacing(p)) return act();
  await noteReplacement(state, p);
  const out = await act();
  await noteReplacement(state, p, out.applied);
  return out;
}

/**
 * Records the node's replacement as its plan decides it (before acting), and the removal's task
 * id once the applier answered it (`applied`).
 */
async function noteReplacement(state: StateStore, p: Plan, applied?: Applied): Promise<void> {
  const inc = p.nextState.incidents.find((i) => isOpen(i) && i.replace);
  const r = inc?.replace;
  if (!inc || !r) return;
  const removeIdx = p.cloud.findIndex((c) => c.kind === 'replace' && c.step === 'remove');
  const taskId = removeIdx >= 0 ? applied?.cloud[removeIdx]?.taskId : undefined;
  await state.update(keyOf(p.target.node), (cur) => {
    const old = (cur ?? {}) as Partial<ReplacementRecord>;
    const rec: ReplacementRecord = {
      node: p.target.node,
      incident: inc.key,
      pool: r.pool,
      instanceId: r.instanceId,
      since: Date.parse(r.at),
      ...(r.newNode ? { newNode: r.newNode } : {}),
      ...(r.readyAt ? { removeAt: Date.parse(r.readyAt) } : {}),
      ...((taskId ?? old.taskId) ? { taskId: taskId ?? old.taskId } : {}),
      gpus: p.target.gpus.slice(0, 16),
    };
    return rec as unknown as Json;
  });
}

/** What the sweep reads for a node at replace-node (core/replace.ts), and a removal task's state. */
export interface ReplaceReader {
  facts(node: NodeInfo, record: ReplacementRecord | undefined, claimed: ReadonlySet<string>): Promise<ReplaceFacts>;
  task(taskId: string): Promise<NonNullable<ReplaceFacts['removal']>>;
}

/**
 * Reads a replacement's facts from ACK and Kubernetes: the node's pool, fresh (its size is about to
 * be set absolutely), whether gpu-reflex may size it (`bounds`: the autoscaler's policy), and its nodes.
 */
export function aliCloudReplaceReader(
  cloud: Pick<CloudPools, 'listNodePools' | 'task'>,
  nodes: Pick<NodeOps, 'list'>,
  bounds: Readonly<Record<string, { max: number }>>,
): ReplaceReader {
  const task = async (id: string) => {
    const t = await cloud.task(id);
    return {
      state: t.state,
      ...(t.state === 'unknown' ? { raw: t.raw ?? '' } : {}),
      ...(t.error ? { error: `${t.error.code}: ${t.error.message}` } : {}),
    };
  };
  // A removal task ACK has no more (NotFound: purged, or never its own) is no task on record: the removal is asked
  // again (core/replace.ts), and ACK refuses an instance already leaving. Thrown, it failed every sweep, for every
  // node, until a person deleted the record. Other errors are thrown: the sweep retries rather than guess.
  const removalOf = async (id: string): Promise<Pick<ReplaceFacts, 'removal'>> => {
    try {
      return { removal: { ...(await task(id)), taskId: id } };
    } catch (err) {
      if (err instanceof NotFoundError) return {};
      throw err;
    }
  };
  return {
    task,
    async facts(node, record, claimed) {
      const poolId = node.labels[NODEPOOL_LABEL];
      const instanceId = instanceIdOf(node.providerId);
      if (!poolId) return { refused: `it is not a node of an ACK node pool (no ${NODEPOOL_LABEL} label)`, members: [] };
      const pool = (await cloud.listNodePools()).find((p) => p.id === poolId);
      const why = !pool
        ? `its node pool ${poolId} is not in the cluster`
        : bounds[pool.id] === undefined
          ? `node pool ${pool.name} (${pool.id}) is not one gpu-reflex may size: the autoscale policy does not name it`
          : pool.ackAutoScaling.enable
            ? `ACK's own autoscaler sizes node pool ${pool.name} (${pool.id})`
            : pool.desiredSize === undefined
              ? `ACK gives no desired size for node pool ${pool.name} (${pool.id}): a grow by one cannot be ` +
                `planned from a size not known (read as 0 it would lower the pool)`
              : pool.chargeType === 'PrePaid'
                ? `node pool ${pool.name} is subscription (PrePaid): ACK never releases its ` +
                  `instances, so gpu-reflex does not replace them`
                : !instanceId
                  ? `spec.providerID names no ECS instance (${node.providerId ?? 'unset'})`
                  : undefined;
      // Once begun, a replacement follows its pool even if the policy changed since: only a start is refused.
      if (why && !record) return { refused: why, members: [] };
      const members = (await nodes.list(`${NODEPOOL_LABEL}=${poolId}`)).map((m) => {
        const st = m.labels[STATE_LABEL];
        return {
          name: m.name,
          ...(m.createdAt ? { createdAt: m.createdAt } : {}),
          ready: m.ready === true && !m.unschedulable,
          held: (st !== undefined && st !== 'healthy') || claimed.has(m.name),
        };
      });
      return {
        // A size ACK does not give: no pool to grow from; a replacement under way still has its removal followed.
        ...(pool && pool.desiredSize !== undefined
          ? {
              pool: {
                id: pool.id,
                name: pool.name,
                desired: pool.desiredSize,
                max: bounds[pool.id]?.max ?? pool.desiredSize,
              },
            }
          : {}),
        ...(instanceId ? { instanceId } : {}),
        members,
        ...(record?.taskId ? await removalOf(record.taskId) : {}),
      };
    },
  };
}

/** True while the node's state has a replacement open. */
export const replacingIn = (s: NodeState): boolean => s.incidents.some((i) => isOpen(i) && i.replace !== undefined);

/** The report that closes a replacement once its node is gone: the removal done, the incident over. */
export function replacedPlan(r: ReplacementRecord, task?: NonNullable<ReplaceFacts['removal']>): Plan {
  const at = new Date(r.removeAt ?? r.since).toISOString();
  const how = task ? `; its ACK task ${r.taskId} ${taskWords(task)}${task.error ? ` (${task.error})` : ''}` : '';
  return {
    kind: 'act',
    incident: r.incident,
    action: 'replace-node',
    scope: 'node',
    phase: 'acted',
    target: { node: r.node, gpus: r.gpus ?? [], migInstances: [], pods: [] },
    evictions: [],
    notices: [],
    cloud: [{ kind: 'replace', step: 'remove', node: r.node, pool: r.pool, instanceId: r.instanceId }],
    reason:
      `node ${r.node} is gone: replaced by ${r.newNode ?? 'a new node'} of node pool ` +
      `${r.pool}, its instance ${r.instanceId} removed from the pool and released${how}; the incident is closed`,
    trigger: {
      eventId: `replace:${r.node}:${r.removeAt ?? r.since}`,
      detailType: 'Scheduled Event',
      node: r.node,
      observedAt: at,
    },
    nextState: emptyState(),
  };
}

/** A removal task's state as the report words it: ACK's own word where gpu-reflex does not know it. */
const taskWords = (t: NonNullable<ReplaceFacts['removal']>): string =>
  t.state !== 'unknown'
    ? `is ${t.state}`
    : `answers ${t.raw ? `state '${t.raw}'` : 'no state'}, which gpu-reflex does not know`;

export const forgetReplacement = (state: StateStore, node: string) => state.update(keyOf(node), () => undefined);

/** The node still exists (undefined: it is gone). */
export async function nodeOrGone(nodes: Pick<NodeOps, 'get'>, name: string): Promise<NodeInfo | undefined> {
  try {
    return await nodes.get(name);
  } catch (err) {
    if (err instanceof NotFoundError) return undefined;
    throw err;
  }
}
