/**
 * The sweep's node pass, every minute: retry blocked evictions, time out stuck drains, act on held-back
 * incidents when the window has room, restore nodes that have been quiet long enough. Plans come
 * from the pure `planSweep`; this file fetches, then carries each node's plan out on the reflex
 * skeleton (lib/reflex.ts), one node at a time under its lease, publishing what any earlier
 * invocation left in a node's outbox on the way. Approvals' expiry and replacements' ends are jobs
 * of their own beside it (sweep-jobs.ts).
 */
import { readOutbox } from '../lib/outbox.ts';
import { carryOut } from '../lib/reflex.ts';
import { withLease } from '../lib/lease.ts';
import { sweepNodeFacts } from './facts.ts';
import { historyCodec } from './core/reconcile.ts';
import { nodeLease, remediationEvent, SWEPT, type RemediationDeps } from './run.ts';
import { STATE_LABEL } from './core/state.ts';
import { nodeOrGone, withReplacementNoted } from './replacements.ts';
import { replacementsIn, type ReplacementRecord } from '../lib/replacements.ts';
import { planSweep, type SweepNodeFacts } from './core/sweep.ts';
import { awaitsTaint } from './core/reset-gate.ts';
import { newsworthy, retryOnly } from './reported.ts';
import type { Plan, PoolFacts } from './core/types.ts';
import type { NodeInfo } from '../adapters/kube/model.ts';
import { NotFoundError } from '../adapters/errors.ts';

export interface SweepPass {
  nodes: number;
  plans: Plan[];
  /** Nodes skipped this round: another invocation held them, or they changed since the snapshot. */
  skipped: string[];
  /** Replacements on record when the pass began (sweep-jobs.ts follows them). */
  records: ReadonlyMap<string, ReplacementRecord>;
}

/** The node, when it still exists and carries gpu-reflex state (what `list(STATE_LABEL)` would select). */
async function oneTracked(deps: RemediationDeps, name: string): Promise<NodeInfo[]> {
  try {
    const n = await deps.nodes.get(name);
    return STATE_LABEL in n.labels ? [n] : [];
  } catch (err) {
    if (err instanceof NotFoundError) return [];
    throw err;
  }
}

/**
 * The node pass: every tracked node (or `only` that one: a `GPU Action Result` from its agent moves its
 * repair on now instead of at the next minute) from its facts to its plan, carried out under the node's
 * lease. The caller holds the pass's own lease (sweep-jobs.ts): the scheduled round, or one node's repair.
 */
export async function sweep(deps: RemediationDeps, only?: string): Promise<SweepPass> {
  // The pass, then once for each node whose fence fallback's taint just landed where a reset waits for it
  // (reset-gate.ts awaitsTaint): the node's next step now, on the Node read again (the taint seen, not only
  // asked for). Only the first pass adds to the list, so each of those nodes is passed again once.
  const todo: (string | undefined)[] = [only];
  const out: SweepPass = { nodes: 0, plans: [], skipped: [], records: new Map() };
  for (const [k, name] of todo.entries()) {
    const one = await pass(deps, name);
    if (k === 0) {
      todo.push(...one.again);
      out.nodes = one.nodes;
      out.records = one.records;
    }
    out.plans.push(...one.plans);
    out.skipped.push(...one.skipped.filter((s) => !out.skipped.includes(s)));
  }
  return out;
}

/**
 * One pass over the tracked nodes (or `only` that one): facts, plans, each carried out under the
 * node's lease. `again`: the nodes whose plan just asked for the taint a reset waits for.
 */
async function pass(
  deps: RemediationDeps,
  only: string | undefined,
): Promise<{
  nodes: number;
  plans: Plan[];
  skipped: string[];
  again: string[];
  records: Map<string, ReplacementRecord>;
}> {
  // One node: read it alone (each agent answer would otherwise list every tracked node of the fleet).
  const tracked = only ? await oneTracked(deps, only) : await deps.nodes.list(STATE_LABEL);
  const pools = new Map<string, PoolFacts>();
  const facts: SweepNodeFacts[] = [];
  // Replacements on record: the removal's task to follow, and new nodes already claimed.
  const records = deps.replacements ? replacementsIn(await deps.state.getAll()) : new Map<string, ReplacementRecord>();
  for (const n of tracked) facts.push(await sweepNodeFacts(deps, deps.policy, n, { pools, records }));
  const now = new Date(deps.clock.now());
  const swept = planSweep(
    { now, nodes: facts, ...(deps.capabilities ? { capabilities: deps.capabilities } : {}) },
    deps.policy,
  );
  const planned = new Map(swept.plans.map((p) => [p.target.node, p]));
  const retried = new Set(swept.retries.map((r) => `${r.node}\u0000${r.pod}`));
  const applied: Plan[] = [];
  const skipped: string[] = [];
  const again: string[] = [];
  for (const n of tracked) {
    const p = planned.get(n.name);
    // A node with nothing to do may still hold events an earlier invocation never got out.
    const pending = readOutbox(n.annotations);
    if (!p && pending.events.length === 0 && pending.notices.length === 0) continue;
    // Whether the plan is news is decided now, from the plan alone; the report renders what was applied.
    const report = p !== undefined && !retryOnly(p, retried) && newsworthy(p);
    const done = await withLease(
      nodeLease(n.name),
      60,
      deps,
      async () => {
        // A remediation may have written the node since the snapshot: then next round decides. Gone since
        // (a replacement's removal, a person): nothing to carry out, and no reason to stop the nodes after it.
        const fresh = await nodeOrGone(deps.nodes, n.name);
        if (!fresh || fresh.resourceVersion !== n.resourceVersion) return false;
        const actions = p ?? { evictions: [], notices: [], cloud: [] };
        // A replacement is on record before the cloud is asked, and its removal's task id after.
        await withReplacementNoted(deps.state, p, () =>
          carryOut(
            {
              node: n.name,
              pending,
              actions,
              events: (a) => (report ? [remediationEvent(p!, a, new Date(deps.clock.now()))] : []),
              codec: historyCodec,
              basis: fresh,
              sweptBy: SWEPT,
            },
            deps,
          ),
        );
        if (p) deps.logger.info('sweep', { node: n.name, action: p.action, phase: p.phase, reason: p.reason });
        return true;
      },
      () => false,
    );
    if (!done) skipped.push(n.name);
    else if (p) {
      applied.push(p);
      if (awaitsTaint(p.nextState, n, deps.policy)) again.push(n.name);
    }
  }
  return { nodes: tracked.length, plans: applied, skipped, again, records };
}
