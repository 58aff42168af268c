/**
 * A MIG plan as the table `gpu-reflex mig plan` and chat's `mig plan` print. Pure, and apart from
 * the CLI on purpose: the chatops bundle imports this, and the CLI's fleet-file path pulls the
 * simulated cluster in (docs/deploy.md: bundle size).
 */
import { layoutWords } from './layout.ts';
import type { MigPlan } from './planner.ts';

export function planTable(plan: MigPlan, notes: readonly string[]): string[] {
  const rows = plan.changes.map((c) => [
    `${c.node}/${c.gpu}`,
    layoutWords(c.from),
    layoutWords(c.to),
    c.unblocks.join(', ') || '-',
    c.disrupts.join(', ') || '-',
  ]);
  const head = ['GPU', 'FROM', 'TO', 'UNBLOCKS', 'DISRUPTS'];
  const width = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (r: string[]) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(width[i]!))).join('  ');
  const out = plan.changes.length > 0 ? [line(head), ...rows.map(line)] : ['no GPU to relay'];
  out.push(
    `pending MIG pods that can run: ${plan.satisfiedBefore} now, ${plan.satisfiedAfter} after ${plan.changes.length} ` +
      `GPU change${plan.changes.length === 1 ? '' : 's'}`,
  );
  for (const c of plan.changes) out.push(`  why ${c.node}/${c.gpu}: ${c.why}`);
  for (const u of plan.unmet) out.push(`  still pending ${u.pod}: ${u.why}`);
  for (const n of notes) out.push(`  note: ${n}`);
  return out;
}
