/**
 * Which plans a remediation reports (a Remediation event): the sweep's node pass and an approval's decision ask
 * the same question of a plan before it is carried out.
 */
import { editsScheduling } from '../lib/plan.ts';
import type { Plan } from './core/types.ts';

/**
 * A round that only asks again for evictions an earlier round asked for (a drain waiting on a disruption budget or
 * an API error) changes nothing anyone would notice: it is carried out and logged, and publishes no report. A drain
 * is reported when it starts (the remediation) and when it ends (drained → repair, or stuck → a person), once each,
 * not once a minute with its failed evictions in between (issue #29).
 */
export function retryOnly(p: Plan, retried: ReadonlySet<string>): boolean {
  return (
    p.evictions.length > 0 &&
    p.evictions.every((e) => retried.has(`${p.target.node}\u0000${e.namespace}/${e.name}`)) &&
    !newsworthy({ ...p, evictions: [] })
  );
}

/**
 * Whether a plan is anyone's news: it changes scheduling, a fence, a pod, a person's inbox or the cloud. Bookkeeping
 * alone (our history) is nobody's.
 */
export function newsworthy(p: Plan): boolean {
  return (
    p.phase !== 'skipped' &&
    (editsScheduling(p.nodeEdit) ||
      p.deviceTaints !== undefined ||
      p.cardFences !== undefined ||
      p.evictions.length > 0 ||
      p.notices.length > 0 ||
      p.cloud.length > 0)
  );
}
