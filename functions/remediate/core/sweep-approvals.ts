/**
 * Held-back incidents (awaiting-approval) acted on by the sweep (pure): approved or rejected in chat,
 * or granted once their pool's blast-radius window has room again, first come first served.
 */
import { checkBlastRadius, takesCapacity } from './blast-radius.ts';
import type { Policy } from './policy.ts';
import { evictable } from './scope.ts';
import { cmp, isOpen, type Incident } from './state.ts';
import type { PoolFacts } from './types.ts';
import { notice } from './plan.ts';
import type { SweepFacts } from './sweep.ts';
import type { Work } from './sweep-work.ts';

/** Held-back incidents, oldest first across all nodes, get acted on while their pool has room. */
export function grantApprovals(work: Work[], facts: SweepFacts, policy: Policy): void {
  const waiting = work.flatMap((w) =>
    w.state.incidents.filter((i) => i.phase === 'awaiting-approval').map((i) => ({ w, i })),
  );
  waiting.sort((a, b) => cmp(a.i.firstAt, b.i.firstAt) || a.w.facts.node.name.localeCompare(b.w.facts.node.name));
  const granted = new Map<string, string[]>();
  for (const { w, i } of waiting) {
    const decision = facts.decisions?.find((d) => d.incident === i.key)?.decision;
    if (decision === 'rejected') {
      const closed: Incident = { ...i, phase: 'closed', closedAt: facts.now.toISOString() };
      w.state = { ...w.state, incidents: w.state.incidents.map((x) => (x === i ? closed : x)) };
      w.reasons.push(`${i.key}: ${i.action} rejected in chat; the incident is closed and left to a person`);
      w.touched.push(closed);
      continue;
    }
    const pool = w.facts.pool;
    const extra = granted.get(pool.name) ?? [];
    const counted: PoolFacts = {
      ...pool,
      quarantinedInWindow: pool.quarantinedInWindow + extra.length,
      quarantinedNodes: [...pool.quarantinedNodes, ...extra],
    };
    const out = w.state.incidents.some(
      (x) =>
        isOpen(x) && x !== i && (x.phase === 'quarantined' || x.phase === 'draining' || x.phase === 'awaiting-repair'),
    );
    if (
      !takesCapacity(i.action) ||
      (decision !== 'approved' && !checkBlastRadius(policy, counted, w.facts.node.name, out).allowed)
    )
      continue;
    const node = w.facts.node.name;
    const drains = i.action !== 'quarantine-gpu';
    const pods = drains
      ? evictable(w.facts.pods)
      : evictable(w.facts.pods).filter((p) =>
          i.workloads.length > 0
            ? i.workloads.includes(p.uid)
            : p.requestsGpu && (p.gpus === undefined || (i.gpu !== undefined && p.gpus.includes(i.gpu))),
        );
    const acted: Incident = {
      ...i,
      phase: drains ? 'draining' : 'quarantined',
      since: facts.now.toISOString(),
      outAt: i.outAt ?? facts.now.toISOString(),
      pods: [...new Set([...i.pods, ...pods.map((p) => p.uid)])],
    };
    w.state = { ...w.state, incidents: w.state.incidents.map((x) => (x === i ? acted : x)) };
    w.evictions.push(...pods);
    const text =
      decision === 'approved'
        ? `${i.key}: ${i.action} approved in chat, going ahead`
        : `${i.key}: the pool ${pool.name} has room again, ${i.action} goes ahead (first come, first served)`;
    w.notices.push(notice(i.action, w.facts.node, text));
    w.reasons.push(text);
    w.touched.push(acted);
    if (!out && !pool.quarantinedNodes.includes(node)) granted.set(pool.name, [...extra, node]);
  }
}
