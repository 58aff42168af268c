/**
 * Scale-in's removals (scale-in-run.ts drains, these give back): a decided removal sent, and the nodes it named
 * followed until they have left their pool.
 */
import { NODEPOOL_LABEL, type CloudTask, type NodePool } from '../adapters/alicloud/ports.ts';
import { instanceIdOf } from '../adapters/alicloud/repair.ts';
import type { Notice } from '../adapters/chat/notifier.ts';
import { BadInputError } from '../adapters/errors.ts';
import type { NodeInfo } from '../adapters/kube/model.ts';
import {
  type AutoscaleDeps,
  type PoolRecord,
  type Removing,
  type SentRequest,
  flush,
  record,
  remediationHold,
  sent,
} from './deps.ts';
import { poolEvent } from './grow.ts';
import { readTask } from './requests.ts';

/**
 * Sends a decided removal (RemoveNodePoolNodes: drain done by us, release pay-as-you-go), then records the request with
 * its event. A removal ACK refused is still `requested` (maybe under way: followRemovals), but its event and notice
 * say that ACK refused it, and why: a person is not told the pool shrinks when ACK's only answer was a refusal.
 */
export async function sendRemoval(
  deps: AutoscaleDeps,
  pool: NodePool,
  removal: NonNullable<PoolRecord['removal']>,
): Promise<PoolRecord> {
  let taskId: string | undefined;
  let refused: string | undefined;
  try {
    ({ taskId } = await deps.cloud.removeNodes(pool.id, removal.instanceIds, { release: true, drain: false }));
  } catch (err) {
    // Sent before and under way (the answer was lost): ACK refuses them as already leaving. Or refused for
    // another reason: the nodes stay on the record until they have left the pool (followRemovals).
    if (!(err instanceof BadInputError)) throw err;
    refused = err.message;
    deps.logger.warn('autoscale-pools: removal refused, taken as maybe under way until the drain timeout', {
      pool: pool.id,
      nodes: removal.nodes,
      error: err,
    });
  }
  const removing: Removing[] = removal.nodes.map((node, i) => ({
    node,
    instanceId: removal.instanceIds[i]!,
    at: removal.at,
    ...(taskId ? { taskId } : { refused: (refused ?? 'refused').slice(0, 500) }),
  }));
  const minutes = deps.policy.scaleIn.drainTimeoutMinutes;
  // An answer with no task id (not one ACK documents) is followed as a refusal is, and said as what it was.
  const answer =
    refused !== undefined
      ? `ACK refused the removal (${refused.slice(0, 500)}), maybe as one already under way (an earlier call ` +
        `whose answer was lost)`
      : 'ACK answered the removal with no task to follow';
  const refusal =
    `${answer}: taken as maybe under way until the drain timeout (${minutes} min); a node still in the pool ` +
    `then is handed back to scheduling and a person told`;
  // The refusal ends the event's reason and leads the notice's text, so neither cut loses it.
  const why = taskId ? removal.reason : `${removal.reason.slice(0, 2048 - refusal.length - 2)}; ${refusal}`;
  const ev = poolEvent(deps, pool, removal.at, removal.from, removal.to, 'requested', why, {
    ...(taskId ? { taskId } : {}),
    cost: removal.cost,
  });
  const shrink = `shrinking node pool ${pool.name} ${removal.from} → ${removal.to}`;
  const notice: Notice = taskId
    ? { title: `gpu-reflex: ${shrink}`, text: removal.reason.slice(0, 1000), severity: 'info' }
    : {
        title: refused !== undefined ? `gpu-reflex: ACK refused ${shrink}` : `gpu-reflex: ${shrink}: ACK gave no task`,
        text: `${refusal}. ${removal.reason}`.slice(0, 1000),
        severity: 'warning',
      };
  return record(
    deps,
    pool.id,
    (x) => ({
      ...x,
      removal: undefined,
      removing: [...(x.removing ?? []).filter((r) => !removal.nodes.includes(r.node)), ...removing],
      ...(taskId ? sent(x, { taskId, from: removal.from, to: removal.to, at: removal.at }) : {}),
    }),
    [ev],
    [notice],
  );
}

/**
 * The nodes whose removal was sent, checked against the pool as it is now: one that has left it (no member of that
 * name on that instance) is done; one whose task failed, one whose task ended `success` yet is still in the pool after
 * the drain timeout, or one whose removal ACK refused and that is still in the pool after the drain timeout (an answer
 * lost to a removal under way would have taken it by then), is handed back to scheduling (our cordon lifted) and a
 * person told: it idles a full period before it is tried again. One whose task is still running after the drain
 * timeout stays on its way out, and a person is told once. A task ACK has
 * no more (NotFound: purged) says nothing either way: its nodes are followed as a refused removal's, by presence
 * until the drain timeout; one that cannot be read now is still on its way out. The names of those still on their
 * way out.
 */
export async function followRemovals(
  deps: AutoscaleDeps,
  pool: NodePool,
  rec: PoolRecord,
  nodes: readonly NodeInfo[],
  now: number,
): Promise<Set<string>> {
  const all = rec.removing ?? [];
  if (all.length === 0) return new Set();
  const timeoutMs = deps.policy.scaleIn.drainTimeoutMinutes * 60_000;
  const tasks = new Map<string, CloudTask | 'gone' | 'unread'>();
  const still: Removing[] = [];
  const back: { r: Removing; node: NodeInfo; why: string }[] = [];
  const overdue: Removing[] = [];
  /** Tasks that ended `success` with a node of theirs still in the pool after the drain timeout. */
  const said = new Set<string>();
  for (const r of all) {
    const node = nodes.find(
      (n) => n.name === r.node && n.labels[NODEPOOL_LABEL] === pool.id && instanceIdOf(n.providerId) === r.instanceId,
    );
    if (!node) continue; // left the pool: done
    if (r.taskId !== undefined) {
      let task = tasks.get(r.taskId);
      if (!task) tasks.set(r.taskId, (task = await readTask(deps, pool.id, r.taskId)));
      // Gone (followRequests tells a person once): by the node's presence alone, as a refusal is.
      if (task === 'gone') {
        if (now - r.at < timeoutMs) still.push(r);
        else
          back.push({
            r,
            node,
            why:
              `ACK has no task ${r.taskId} for its removal any more (DescribeTaskInfo: NotFound) and it is ` +
              `still in the pool ${deps.policy.scaleIn.drainTimeoutMinutes} min later`,
          });
      }
      // Done, by ACK's word, yet the node (that name on that instance) is still in the pool after the drain timeout:
      // ACK's success is not the node gone, so this is a removal that did not happen, handed back as a failed one.
      // (cluster-autoscaler likewise bounds a cloud deletion, MaxCloudProviderNodeDeletionTime in
      // kubernetes/autoscaler cluster-autoscaler/core/scale_down.go; ours is the drain timeout.)
      else if (task !== 'unread' && task.state === 'success' && now - r.at >= timeoutMs) {
        said.add(r.taskId);
        back.push({
          r,
          node,
          why:
            `its removal task ${r.taskId} ended, ACK said success, yet it is still in the pool ` +
            `${deps.policy.scaleIn.drainTimeoutMinutes} min later`,
        });
      }
      // Unread now, running, done but not yet gone, or a state ACK does not document (followRequests tells a person
      // of that once): still on its way out, never handed back on a word that does not say the removal failed. A task
      // still running after the drain timeout leaves its node cordoned: a person is told once (`overdue` on record).
      else if (task === 'unread' || task.state !== 'failed') {
        still.push(r);
        if (task !== 'unread' && task.state === 'running' && now - r.at >= timeoutMs && !r.overdue) overdue.push(r);
      } else
        back.push({
          r,
          node,
          why:
            `its removal failed (task ${r.taskId}: ${task.error?.code ?? 'unknown'}: ` +
            `${task.error?.message ?? 'no detail'})`,
        });
    } else if (now - r.at < timeoutMs) still.push(r);
    else
      back.push({
        r,
        node,
        why:
          `ACK refused its removal (${r.refused ?? 'no detail'}) and it is still in the pool ` +
          `${deps.policy.scaleIn.drainTimeoutMinutes} min later`,
      });
  }
  if (still.length < all.length || overdue.length > 0) {
    // The cordon first, then the record: a round that stops between finds the node again and lifts it again.
    // Remediation's hold on it (taken since the drain) is not ours to lift.
    for (const b of back)
      if (b.node.unschedulable === true && !remediationHold(b.node)) await deps.nodes.uncordon(b.r.node);
    const gone = new Set(all.filter((r) => !still.includes(r)).map((r) => `${r.node}/${r.instanceId}`));
    const notices: Notice[] = back.map((b) => ({
      title: `gpu-reflex: could not give back ${b.r.node}`,
      text: (
        `${pool.name}: ${b.r.node} was drained to be given back, but ${b.why}: kept, ` +
        (remediationHold(b.node) ? 'left cordoned (remediation holds it)' : 'uncordoned')
      ).slice(0, 1000),
      severity: 'warning',
    }));
    for (const r of overdue)
      notices.push({
        title: `gpu-reflex: ${r.node} is still leaving node pool ${pool.name}`,
        text: (
          `${pool.name}: ${r.node} was drained to be given back; its removal task ${r.taskId} is still running ` +
          `${deps.policy.scaleIn.drainTimeoutMinutes} min later (the drain timeout): it stays cordoned until it ` +
          `leaves the pool or the task fails; a person may look at the task`
        ).slice(0, 1000),
        severity: 'warning',
      });
    const told = new Set(overdue.map((r) => `${r.node}/${r.instanceId}`));
    // Nodes handed back though their task said success: their request (requests.ts) closes as failed, naming them.
    const behind = new Map<string, string[]>();
    for (const b of back)
      if (b.r.taskId !== undefined && said.has(b.r.taskId))
        behind.set(b.r.taskId, [...(behind.get(b.r.taskId) ?? []), b.r.node]);
    const mark = (s: SentRequest): SentRequest =>
      behind.has(s.taskId) ? { ...s, leftBehind: [...(s.leftBehind ?? []), ...behind.get(s.taskId)!] } : s;
    await flush(
      deps,
      pool.id,
      await record(
        deps,
        pool.id,
        (x) => {
          const left = (x.removing ?? [])
            .filter((r) => !gone.has(`${r.node}/${r.instanceId}`))
            .map((r) => (told.has(`${r.node}/${r.instanceId}`) ? { ...r, overdue: true as const } : r));
          return {
            ...x,
            removing: left.length > 0 ? left : undefined,
            ...(x.request ? { request: mark(x.request) } : {}),
            ...(x.earlier ? { earlier: x.earlier.map(mark) } : {}),
          };
        },
        [],
        notices,
      ),
    );
    for (const b of back)
      deps.logger.warn('autoscale-pools: a node drained for scale-in is still in its pool', {
        pool: pool.id,
        node: b.r.node,
        why: b.why,
      });
  }
  return new Set(still.map((r) => r.node));
}
