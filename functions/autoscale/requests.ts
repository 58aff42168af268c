import type { NodePool } from '../adapters/alicloud/ports.ts';
import type { PublishedEvent } from '../adapters/bus.ts';
import type { Notice } from '../adapters/chat/notifier.ts';
import { type AutoscaleDeps, type PoolRecord, type SentRequest, record } from './deps.ts';
import { poolEvent } from './grow.ts';
import { NO_STOCK_BACKOFF_MS, isNoStock } from './stock.ts';

/**
 * The pool's requests whose ACK task ended since the last round, each reported once (a GPU Pool Scaled event
 * `succeeded` or `failed`, a notice for a failure) and taken off the record in the same write; a task failed NoStock
 * sets the pool's sold-out back-off. A task in a state ACK does not document is neither: the request stays on the
 * record, followed, and a person is told once (each new word once), in the same write that remembers it. `latest`:
 * follow `request` too (not while an intent or a removal is still to be sent: that branch owns the record this round).
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
  for (const req of followed) {
    const task = await deps.cloud.task(req.taskId);
    if (task.state === 'running') continue;
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
    const ok = task.state === 'success';
    const why = endedWhy(p, req, task);
    events.push(poolEvent(deps, p, req.at, req.from, req.to, ok ? 'succeeded' : 'failed', why, { taskId: req.taskId }));
    if (!ok)
      notices.push({
        title: `gpu-reflex: node pool ${p.name} could not ${req.to < req.from ? 'shrink' : 'grow'}`,
        text: why.slice(0, 500),
        severity: 'warning',
      });
    soldOut ||= !ok && isNoStock(task.error?.code);
    ended.add(req.taskId);
    finished = ok ? 'succeeded' : 'failed';
  }
  if (!finished && told.size === 0) return undefined;
  const until = deps.clock.now() + NO_STOCK_BACKOFF_MS;
  const remember = (s: SentRequest): SentRequest =>
    told.has(s.taskId) ? { ...s, unknownTold: told.get(s.taskId)! } : s;
  const rec = await record(
    deps,
    p.id,
    (x) => {
      const earlier = x.earlier?.filter((e) => !ended.has(e.taskId)).map(remember);
      return {
        ...x,
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

function endedWhy(p: NodePool, req: SentRequest, task: { state: string; error?: { code?: string; message?: string } }) {
  if (task.state === 'success') return `${p.name}: ${req.to} nodes requested, the ACK task ended successfully`;
  return (
    `${p.name}: ${req.to < req.from ? 'shrinking' : 'growing'} ${req.from} → ${req.to} ` +
    `failed: ${task.error?.code ?? 'unknown'}: ${task.error?.message ?? 'no detail'}` +
    (isNoStock(task.error?.code)
      ? `; every instance type of the pool is sold out: other pools are used for ${NO_STOCK_BACKOFF_MS / 60_000} min`
      : '')
  );
}
