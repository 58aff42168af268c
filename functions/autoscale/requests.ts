import type { CloudTask, NodePool } from '../adapters/alicloud/ports.ts';
import type { PublishedEvent } from '../adapters/bus.ts';
import type { Notice } from '../adapters/chat/notifier.ts';
import { NotFoundError } from '../adapters/errors.ts';
import { type AutoscaleDeps, type PoolRecord, type SentRequest, record } from './deps.ts';
import { poolEvent } from './grow.ts';
import { NO_STOCK_BACKOFF_MS, isNoStock } from './stock.ts';

/**
 * An ACK task as DescribeTaskInfo answers it; `gone` when there is no task to follow: ACK answered the request with
 * none (an empty `task_id`), or answers NotFound for it (ACK keeps tasks for a while only, and may have purged an old
 * one); `unread` when the question failed otherwise (logged): asked again next round. Neither is under way nor ended,
 * and neither stops the round: before, one such task failed every round, for every pool, for good.
 */
export async function readTask(
  deps: AutoscaleDeps,
  poolId: string,
  taskId: string,
): Promise<CloudTask | 'gone' | 'unread'> {
  if (!taskId) return 'gone';
  try {
    return await deps.cloud.task(taskId);
  } catch (err) {
    if (err instanceof NotFoundError) return 'gone';
    deps.logger.warn('autoscale-pools: an ACK task could not be read; followed again next round', {
      pool: poolId,
      taskId,
      error: err,
    });
    return 'unread';
  }
}

/**
 * The pool's requests whose ACK task ended since the last round, each reported once (a GPU Pool Scaled event
 * `succeeded` or `failed`, a notice for a failure) and taken off the record in the same write; a task failed NoStock
 * sets the pool's sold-out back-off. A removal's task that ended `success` is not the removal done: its request is
 * followed while a node of it is still on its way out of the pool (`removing`), and closes `failed`, naming them, when
 * nodes of it were left in the pool (`leftBehind`, removals.ts). A task in a state ACK does not document is neither:
 * the request stays on the record, followed, and a person is told once (each new word once), in the same write that
 * remembers it. A request with no task to follow (`readTask`: none given, or ACK has none any more) is neither done
 * nor failed: it is taken off the record and a person told, in the same write (so once); one whose task could not be
 * read stays followed. `latest`: follow `request` too (not while an intent or a removal is still to be sent: that
 * branch owns the record this round).
 * Undefined when nothing was written.
 */
export async function followRequests(
  deps: AutoscaleDeps,
  p: NodePool,
  r: PoolRecord,
  latest: boolean,
): Promise<{ rec: PoolRecord; finished?: 'succeeded' | 'failed' } | undefined> {
  const followed = [...(r.earlier ?? []), ...(latest && r.request ? [r.request] : [])];
  const events: PublishedEvent[] = [];
  const notices: Notice[] = [];
  const ended = new Set<string>();
  const told = new Map<string, string>();
  let finished: 'succeeded' | 'failed' | undefined;
  let soldOut = false;
  const grewNot: { req: SentRequest; why: string; notice: Notice }[] = [];
  for (const req of followed) {
    const task = await readTask(deps, p.id, req.taskId);
    if (task === 'unread') continue;
    if (task === 'gone') {
      notices.push(goneNotice(p, req));
      deps.logger.warn('autoscale-pools: ACK has no task for a request; no longer followed, neither done nor failed', {
        pool: p.id,
        taskId: req.taskId,
      });
      ended.add(req.taskId);
      continue;
    }
    if (task.state === 'running') continue;
    // A removal is done when its nodes have left the pool, not when its task says so: while one is still on its way
    // out (removals.ts `followRemovals`), its request is followed; one left behind closes it as failed.
    if (task.state === 'success' && (r.removing ?? []).some((x) => x.taskId === req.taskId)) continue;
    if (task.state === 'unknown') {
      const word = task.raw ?? '';
      if (req.unknownTold === word) continue;
      told.set(req.taskId, word);
      notices.push(unknownNotice(p, req, word));
      deps.logger.warn('autoscale-pools: an ACK task is in a state gpu-reflex does not know; followed, not ended', {
        pool: p.id,
        taskId: req.taskId,
        state: word,
      });
      continue;
    }
    const ok = task.state === 'success' && !req.leftBehind?.length;
    const why = endedWhy(p, req, task, deps.policy.scaleIn.drainTimeoutMinutes);
    events.push(poolEvent(deps, p, req.at, req.from, req.to, ok ? 'succeeded' : 'failed', why, { taskId: req.taskId }));
    // A removal that left its nodes behind was told node by node when they were handed back (removals.ts).
    if (!ok && !req.leftBehind?.length) {
      const n: Notice = {
        title: `gpu-reflex: node pool ${p.name} could not ${req.to < req.from ? 'shrink' : 'grow'}`,
        text: why.slice(0, 500),
        severity: 'warning',
      };
      notices.push(n);
      if (req.to > req.from) grewNot.push({ req, why, notice: n });
    }
    soldOut ||= !ok && isNoStock(task.error?.code);
    ended.add(req.taskId);
    finished = ok ? 'succeeded' : 'failed';
  }
  if (!finished && told.size === 0 && ended.size === 0) return undefined;
  const until = deps.clock.now() + NO_STOCK_BACKOFF_MS;
  const remember = (s: SentRequest): SentRequest =>
    told.has(s.taskId) ? { ...s, unknownTold: told.get(s.taskId)! } : s;
  const rec = await record(
    deps,
    p.id,
    (x) => {
      const earlier = x.earlier?.filter((e) => !ended.has(e.taskId)).map(remember);
      // Nodes prepared for maintenance whose replacement a failed grow was (by the size asked for each,
      // TrackedNode.asked): none comes, as for a size ACK refused (grow.ts `refusedSize`). They are drained by their
      // deadline and named in the failure's notice, worded in this same write that reads them.
      let maintenance = x.maintenance;
      for (const { req, why, notice } of grewNot) {
        const mine = Object.entries(maintenance ?? {}).filter(
          ([, t]) => t.replacement && t.asked !== undefined && t.asked > req.from && t.asked <= req.to,
        );
        if (mine.length === 0) continue;
        const names = mine.map(([n]) => n);
        notice.text = (
          `${names.join(', ')} (prepared for maintenance) get${names.length === 1 ? 's' : ''} no replacement: ` +
          `drained by ${names.length === 1 ? 'its' : 'their'} deadline. ${why}`
        ).slice(0, 1000);
        const noReplacement = `the ACK task of the pool size ${req.to} asked for it failed: ${why}`.slice(0, 500);
        maintenance = {
          ...maintenance,
          ...Object.fromEntries(mine.map(([n, t]) => [n, { ...t, replacement: false, noReplacement }])),
        };
      }
      return {
        ...x,
        ...(maintenance !== x.maintenance ? { maintenance } : {}),
        request: x.request && ended.has(x.request.taskId) ? undefined : x.request && remember(x.request),
        earlier: earlier && earlier.length > 0 ? earlier : undefined,
        ...(soldOut ? { noStock: { types: [...p.instanceTypes], until } } : {}),
      };
    },
    events,
    notices,
  );
  return { rec, ...(finished ? { finished } : {}) };
}

/** The notice of a request whose task ACK says is in a state it does not document (`word`: ACK's, maybe none). */
function unknownNotice(p: NodePool, req: SentRequest, word: string): Notice {
  const shrink = req.to < req.from;
  return {
    title: `gpu-reflex: node pool ${p.name}: ACK task ${req.taskId} is in a state gpu-reflex does not know`,
    text: (
      `${p.name}: ${shrink ? 'shrinking' : 'growing'} ${req.from} → ${req.to} was asked at ` +
      `${new Date(req.at).toISOString()}; DescribeTaskInfo answers ${word ? `state '${word}'` : 'no state'} for its ` +
      `task, which is none of those ACK documents (running, success, failed): gpu-reflex takes the request as ` +
      `neither done nor failed and keeps following it` +
      (shrink ? '; the nodes it removes stay cordoned and on record until they have left the pool' : '') +
      '. A person must look at the task in the ACK console.'
    ).slice(0, 1000),
    severity: 'warning',
  };
}

/** The notice of a request with no task to follow: ACK gave none, or has none any more. */
function goneNotice(p: NodePool, req: SentRequest): Notice {
  const shrink = req.to < req.from;
  const what = `${shrink ? 'shrinking' : 'growing'} ${req.from} → ${req.to}`;
  return {
    title: req.taskId
      ? `gpu-reflex: node pool ${p.name}: ACK has no task ${req.taskId} any more`
      : `gpu-reflex: node pool ${p.name}: ACK gave no task for ${what}`,
    text: (
      `${p.name}: ${what} was asked at ${new Date(req.at).toISOString()}; ` +
      (req.taskId
        ? `DescribeTaskInfo answers NotFound for its task ${req.taskId} (ACK may have purged an old task)`
        : 'ACK answered it with no task id') +
      ': gpu-reflex takes the request as neither done nor failed and no longer follows it; the pool is planned ' +
      'from its size as ACK gives it each round' +
      (shrink ? ', and the nodes it removes stay on record until they have left the pool' : '') +
      '. A person must check in the ACK console that the pool has the nodes it should.'
    ).slice(0, 1000),
    severity: 'warning',
  };
}

function endedWhy(
  p: NodePool,
  req: SentRequest,
  task: { state: string; error?: { code?: string; message?: string } },
  drainMinutes: number,
) {
  const left = req.leftBehind ?? [];
  if (task.state === 'success' && left.length > 0)
    return (
      `${p.name}: shrinking ${req.from} → ${req.to} did not happen as asked: ACK said its task ${req.taskId} ` +
      `succeeded, yet ${left.join(', ')} ${left.length === 1 ? 'is' : 'are'} still in the pool ${drainMinutes} min ` +
      `later: handed back to scheduling`
    );
  if (task.state === 'success') return `${p.name}: ${req.to} nodes requested, the ACK task ended successfully`;
  return (
    `${p.name}: ${req.to < req.from ? 'shrinking' : 'growing'} ${req.from} → ${req.to} ` +
    `failed: ${task.error?.code ?? 'unknown'}: ${task.error?.message ?? 'no detail'}` +
    (isNoStock(task.error?.code)
      ? `; every instance type of the pool is sold out: other pools are used for ${NO_STOCK_BACKOFF_MS / 60_000} min`
      : '')
  );
}
