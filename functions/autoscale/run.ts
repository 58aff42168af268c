/**
 * The pool autoscaler, every minute (`autoscale-pools`), on the reflex skeleton:
 *
 *   lease → follow up earlier requests (their ACK task ended: GPU Pool Scaled succeeded/failed)
 *   → gather facts (node pools from ACK, nodes and pending GPU pods from Kubernetes, prices from
 *   ECS) → plan (core/planner.ts, pure) → for each pool to grow: record the intent in the state
 *   ConfigMap, set the pool's desired size (absolute: a retry cannot grow it twice), record the
 *   request with its event and notice (the outbox), publish, clear → report.
 *
 * Only pools the policy names are touched; a pool whose own ACK autoscaler is on is left to it.
 * A pool remediation is replacing a node of (its `replace.<node>` records, remediate/replacements.ts)
 * gives no node back meanwhile, and its nodes' idle time starts over once the replacement is done:
 * the new node is the broken one's capacity, not demand that went away. Remediation sets sizes
 * under the same Lease (POOL_SIZE_LEASE), so the two never write over each other's size.
 *
 * The steps live beside it: approval.ts (scale-outs above the policy's cost), deps.ts (ports, the outcome, the
 * pool records and their outbox), stock.ts (sold-out types and prices), pool-states.ts (pending pods, gangs, the
 * pools as the planner sees them), grow.ts (a pool grown and its events), scale-in-run.ts (idle nodes drained and
 * given back), removals.ts (their removal sent, and followed until they have left the pool).
 */
export { scaleOutApprovalId } from './approval.ts';
export type { AutoscaleDeps, AutoscaleOutcome } from './deps.ts';
import { NODEPOOL_LABEL, isSized } from '../adapters/alicloud/ports.ts';
import { withLease } from '../lib/lease.ts';
import { countNotDemand, type GangSpec } from './demand.ts';
import { planWithGangs } from './core/gangs.ts';
import { withoutRoomOnExisting } from './existing-room.ts';
import { replacementsByPool } from '../lib/replacements.ts';
import { maintainPools } from './maintenance.ts';
import { heldForApproval } from './approval.ts';
import {
  type AutoscaleDeps,
  type AutoscaleOutcome,
  type PoolRecord,
  poolKey,
  flush,
  record,
  cooldownMs,
  sent,
} from './deps.ts';
import { waitingGpu, podsOf, gangsOf, gangSpecsOf, gangPodsCovered, poolStates } from './pool-states.ts';
import { poolEvent, reasonOf, growPool, growNotice, maintenanceBook, membersOf, refusedSize } from './grow.ts';
import { BadInputError } from '../adapters/errors.ts';
import { followArrivals, startGrowing, type Arrival } from './arrivals.ts';
import { scaleIn } from './scale-in-run.ts';
import { sendRemoval } from './removals.ts';
import { followRequests } from './requests.ts';

/** ACK's label on every node of a node pool. */
export { NODEPOOL_LABEL };
export { GPU_SHARE_LABEL } from './pool-states.ts';

export async function autoscalePools(deps: AutoscaleDeps): Promise<AutoscaleOutcome> {
  const empty: AutoscaleOutcome = {
    scaled: {},
    held: {},
    finished: {},
    released: [],
    draining: [],
    kept: [],
    pending: 0,
    awaitingInFlight: 0,
    deferred: 0,
    unhostable: 0,
    hourlyCost: 0,
    notDemand: { gated: 0, nominated: 0, 'not-unschedulable': 0, fitsExisting: 0 },
    gangs: { held: [], grown: {} },
    maintenance: { preparing: [], draining: [], returned: [], refused: [] },
  };
  // The literal is POOL_SIZE_LEASE (adapters/alicloud/ports.ts), which remediation's replacements
  // hold too; it stays spelled out so the build's check finds this function's global Lease.
  return withLease(
    'autoscale-pools',
    120,
    deps,
    async () => {
      const out: AutoscaleOutcome = {
        ...empty,
        scaled: {},
        held: {},
        finished: {},
        released: [],
        draining: [],
        kept: [],
        maintenance: { preparing: [], draining: [], returned: [], refused: [] },
      };
      const all = await deps.cloud.listNodePools();
      for (const id of Object.keys(deps.policy.pools))
        if (!all.some((p) => p.id === id))
          deps.logger.warn('autoscale-pools: the policy names a node pool the cluster does not have', {
            pool: id,
            cluster: deps.clusterId,
          });
      const named = all.filter((p) => deps.policy.pools[p.id] !== undefined);
      // A pool whose desired size ACK does not give is not touched at all (records.ts nodePoolFrom): sizes are
      // absolute, and one planned from a size not known could lower it under its running jobs.
      for (const p of named.filter((x) => !isSized(x)))
        deps.logger.warn(
          'autoscale-pools: ACK gives no desired size for the node pool; left alone (no size planned or set)',
          { pool: p.id },
        );
      const managed = named.filter(isSized);
      const stored = await deps.state.getAll();
      const records = new Map(managed.map((p) => [p.id, (stored[poolKey(p.id)] ?? {}) as PoolRecord]));

      // 1. Requests decided earlier: an intent not known to be sent is sent again (absolute size);
      //    a request whose ACK task ended is reported once.
      const written = new Map<string, PoolRecord>();
      for (const p of managed) {
        const r = records.get(p.id)!;
        if (r.intent) {
          // Never lower on a re-send: a size above the intent is a replacement's node (or ours, sent).
          const intent = { ...r.intent, to: Math.max(r.intent.to, p.desiredSize) };
          // growPool put the pool's nodes on the record with its intent; maintenance's own intent did not.
          const members = r.growing ? [] : membersOf(await deps.nodes.list(), p.id);
          let taskId: string;
          try {
            ({ taskId } = await deps.cloud.setDesiredSize(p.id, intent.to));
          } catch (err) {
            if (!(err instanceof BadInputError)) throw err;
            // A refusal is an answer: dropped and told once, not re-sent every round (grow.ts refusedSize).
            written.set(p.id, await refusedSize(deps, p, r.intent, err.message, deps.clock.now()));
            continue;
          }
          const ev = poolEvent(deps, p, intent.at, intent.from, intent.to, 'requested', intent.reason, {
            taskId,
            cost: intent.cost,
          });
          written.set(
            p.id,
            await record(
              deps,
              p.id,
              (x) => ({
                ...x,
                intent: undefined,
                refused: undefined,
                growing: startGrowing(x.growing, members, intent.from, intent.to, intent.at),
                ...sent(x, { taskId, from: intent.from, to: intent.to, at: intent.at }),
                cooldownUntil: intent.at + cooldownMs(deps, p.id),
              }),
              [ev],
              // The round that decided it stopped before recording its notice: never sent otherwise.
              [growNotice(p, intent.from, intent.to, intent.reason, intent.cost)],
            ),
          );
          p.desiredSize = intent.to;
        } else if (r.removal) {
          written.set(p.id, await sendRemoval(deps, p, r.removal));
        }
        // Tasks that ended since: each request reported once (the latest only when no intent or removal was due).
        const ended = await followRequests(deps, p, written.get(p.id) ?? r, !r.intent && !r.removal);
        if (ended) {
          written.set(p.id, ended.rec);
          if (ended.finished) out.finished[p.id] = ended.finished;
        }
      }
      // The round's first read of the state holds what earlier rounds left unsent: no read per pool.
      for (const p of managed) await flush(deps, p.id, written.get(p.id) ?? records.get(p.id)!);

      // 2. Plan on fresh facts.
      const now = deps.clock.now();
      const after = await deps.state.getAll();
      const fresh = new Map(managed.map((p) => [p.id, (after[poolKey(p.id)] ?? {}) as PoolRecord]));
      const [nodes, pods, specs] = await Promise.all([
        deps.nodes.list(),
        deps.pods.list(),
        // Unread (no Volcano or Kueue objects to be had), every waiting pod of a gang is bought for.
        gangSpecsOf(deps.gangs).catch((e: unknown) => {
          deps.logger.warn('autoscale-pools: gangs’ own minimums unread: buying for every waiting pod of a gang', {
            error: e instanceof Error ? e.message : String(e),
          });
          return [] as GangSpec[];
        }),
      ]);
      const waiting = podsOf(pods, now, deps.policy.pendingSeconds);
      const { plan: pending, fitsExisting } = withoutRoomOnExisting(waiting, nodes, pods);
      for (const f of fitsExisting.slice(0, 20))
        deps.logger.info('autoscale-pools: a card of an existing node has room for this pod', f);
      const arrivals = new Map<string, Arrival>();
      const states = await poolStates(deps, managed, nodes, fresh, now, arrivals);
      // Scale-outs are followed until their nodes are Ready with GPUs: forgotten then, told once past 15 min.
      await followArrivals(deps, managed, arrivals, fresh, now);
      // 2b. Capacity known to go away (ECS maintenance, spot interruptions): cordon, grow first, drain, return.
      const book = maintenanceBook(deps, fresh, states, now, nodes);
      out.maintenance = await maintainPools(deps, managed, nodes, pods, book);
      for (const s of states) s.desired = managed.find((p) => p.id === s.id)!.desiredSize;
      const plan = planWithGangs(states, pending, gangsOf(pods, specs), gangPodsCovered(fitsExisting));
      Object.assign(out, {
        notDemand: { ...countNotDemand(waitingGpu(pods)), fitsExisting: fitsExisting.length },
        pending: waiting.length,
        awaitingInFlight: plan.awaitingInFlight.length,
        deferred: plan.deferred.length,
        unhostable: plan.unhostable.length,
        hourlyCost: plan.hourlyCost,
        gangs: { held: plan.held, grown: plan.gangs },
      });
      for (const why of plan.held) deps.logger.info('autoscale-pools: a gang gets all its nodes or none', { why });
      for (const u of plan.unhostable.slice(0, 20)) deps.logger.info('autoscale-pools: no pool can host this pod', u);
      for (const d of plan.deferred.slice(0, 20)) deps.logger.info('autoscale-pools: pod waits on pool limits', d);

      // 3. Act: intent first, then the absolute size, then the request with its event.
      for (const inc of plan.increments) {
        const pool = managed.find((p) => p.id === inc.poolId)!;
        const reason = reasonOf(inc, plan);
        if (await heldForApproval(deps, pool, inc, reason, now)) {
          out.held[pool.id] = inc.to;
          continue;
        }
        const taskId = await growPool(deps, pool, inc, reason, now, membersOf(nodes, pool.id));
        if (taskId === undefined) continue;
        deps.logger.info('autoscale-pools: growing node pool', {
          pool: pool.id,
          from: inc.from,
          to: inc.to,
          taskId,
          pods: inc.pods.length,
          hourlyCost: inc.hourlyCost,
        });
        out.scaled[pool.id] = inc.to;
      }

      // 4. Scale-in: idle nodes of pools that did not just grow are drained, then given back.
      const replacing = replacementsByPool(after);
      for (const p of managed) {
        const template = states.find((x) => x.id === p.id);
        if (!template || out.scaled[p.id] !== undefined || p.ackAutoScaling.enable) continue;
        // Every waiting pod holds scale-in back, those an existing node has room for too: it may be this pool's.
        await scaleIn(deps, {
          pool: p,
          rec: fresh.get(p.id)!,
          template,
          nodes,
          pods,
          pending: waiting,
          now,
          out,
          replacing: replacing.get(p.id) ?? [],
        });
      }
      return out;
    },
    () => (deps.logger.info('autoscale-pools already running elsewhere'), empty),
  );
}
