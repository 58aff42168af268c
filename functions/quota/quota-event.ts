import { createHash } from 'node:crypto';
import { QUOTA_REWRITTEN, SCHEMA_VERSION, SOURCES, type QuotaRewrittenDetail } from '../../events/index.ts';
import type { PublishedEvent } from '../adapters/bus.ts';
import type { QuotaInfo } from '../adapters/kube/model.ts';
import { parseQuantity } from '../adapters/kube/quantity.ts';
import type { NamespaceQuota, QuotaPlan } from './core/planner.ts';
import type { QuotaDeps } from './deps.ts';
import type { CapacityOut } from './facts.ts';

/** The Quota Rewritten event, and its account of capacity in data and in words (run.ts, rollback.ts). */
export type EventChange = QuotaRewrittenDetail['changes'][number];

export const changesOf = (nq: NamespaceQuota): EventChange[] =>
  nq.changes.map((c) => ({ resource: c.key, from: c.from === null ? null : String(c.from), to: String(c.to) }));

/** A namespace's quota changes as an event; `now` makes its id (with a digest of the changes). */
export function quotaEvent(
  deps: Pick<QuotaDeps, 'clock' | 'config'>,
  about: {
    namespace: string;
    changes: EventChange[];
    reason: string;
    now: number;
    capacity?: QuotaRewrittenDetail['capacity'];
  },
): PublishedEvent {
  const { namespace, changes, reason, now, capacity } = about;
  const digest = createHash('sha256').update(JSON.stringify(changes)).digest('hex').slice(0, 12);
  const detail: QuotaRewrittenDetail = {
    schemaVersion: SCHEMA_VERSION,
    eventId: `quota:${namespace}:${digest}:${now}`.slice(0, 128),
    occurredAt: new Date(deps.clock.now()).toISOString(),
    namespace,
    quota: deps.config.quotaName,
    changes: changes.slice(0, 64),
    reason: reason.slice(0, 2048),
    ...(capacity ? { capacity } : {}),
    dryRun: false,
  };
  return { source: SOURCES.functions, detailType: QUOTA_REWRITTEN, detail, resources: [`namespace/${namespace}`] };
}

/** The event's account of capacity: what was shared out, and what was left out and why (facts.ts). */
export function capacityOf(
  plan: QuotaPlan,
  out: readonly CapacityOut[],
): NonNullable<QuotaRewrittenDetail['capacity']> {
  return {
    resources: Object.entries(plan.pool)
      .filter(([, p]) => !p.unit)
      .slice(0, 64)
      .map(([resource, p]) => ({ resource, capacity: p.capacity, shared: p.shared })),
    out: out.slice(0, 64).map((o) => ({ ...o, why: o.why.slice(0, 256) })),
  };
}

/** `capacity nvidia.com/gpu 7: a100-0: 1 GPU fenced by remediation`, when something is left out. */
export function capacityWords(c: NonNullable<QuotaRewrittenDetail['capacity']>): string[] {
  if (c.out.length === 0) return [];
  const gpu = c.resources.find((r) => r.resource === 'nvidia.com/gpu') ?? c.resources[0];
  return [
    `capacity${gpu ? ` ${gpu.resource} ${gpu.capacity}` : ''}: ${c.out.map((o) => `${o.node}: ${o.why}`).join(', ')}`,
  ];
}

const amount = (q: string | undefined): number | undefined => {
  try {
    return q === undefined ? undefined : parseQuantity(q);
  } catch {
    return undefined;
  }
};

/**
 * Whether the quota as read says what a recorded Quota Rewritten reports (each change's new value; null: the key,
 * or the quota, absent). The event is recorded before its write (the outbox rule): one the quota does not say is
 * a write that never landed (a 409, a crash between), not news. Other events are taken as they are.
 */
export function landed(e: PublishedEvent, current: QuotaInfo | undefined): boolean {
  if (e.detailType !== QUOTA_REWRITTEN) return true;
  return (e.detail as unknown as QuotaRewrittenDetail).changes.every((c) =>
    c.to === null ? current?.hard[c.resource] === undefined : amount(current?.hard[c.resource]) === amount(c.to),
  );
}
