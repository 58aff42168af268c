import { isRetryable } from '../adapters/errors.ts';
import { parseQuantity } from '../adapters/kube/quantity.ts';
import {
  HOLD_UNTIL_ANNOTATION,
  MANAGED_BY,
  PREVIOUS_HARD_ANNOTATION,
  WRITTEN_HARD_ANNOTATION,
  type QuotaDeps,
} from './deps.ts';
import { record } from './namespace-outbox.ts';
import { quotaEvent, type EventChange } from './quota-event.ts';

export interface RolledBack {
  namespace: string;
  from: Record<string, string>;
  to: Record<string, string>;
  /** gpu-reflex had created the quota: it was deleted, not emptied, and is not held. */
  deleted: boolean;
  /** Said when `force` let a rollback go below what the namespace uses, or cut where its usage is unknown. */
  warnings: string[];
}

export interface RollbackOutcome {
  restored: RolledBack[];
  skipped: { namespace: string; why: string }[];
  /**
   * Left alone: going back would put the namespace below what it uses, or cut where its usage is unknown (and
   * `force` was not given).
   */
  refused: { namespace: string; why: string }[];
}

function amount(q: string | undefined): number | undefined {
  if (q === undefined) return undefined;
  try {
    return parseQuantity(q);
  } catch {
    return undefined;
  }
}

/** `requests.nvidia.com/gpu 4 < 6 used` for each key whose restored value is below its usage. */
function belowUsage(to: Record<string, string>, used: Record<string, string>): string[] {
  return Object.keys(to)
    .sort()
    .flatMap((k) => {
      const v = amount(to[k]);
      const u = amount(used[k]);
      return v !== undefined && u !== undefined && v < u ? [`${k} ${to[k]} < ${used[k]} used`] : [];
    });
}

/**
 * `requests.cpu 8 (unlimited now)` for each key the rollback cuts (lower than now, or a limit where there was
 * none) whose usage the quota's status does not give: the quota controller has not counted it yet (a quota just
 * written, a resource it did not limit before). Unknown usage is no room to cut into: the cut is weighed like
 * one below usage.
 */
function unweighed(to: Record<string, string>, hard: Record<string, string>, used: Record<string, string>): string[] {
  return Object.keys(to)
    .sort()
    .flatMap((k) => {
      if (amount(used[k]) !== undefined) return [];
      const v = amount(to[k]);
      const now = amount(hard[k]);
      const cut = hard[k] === undefined || v === undefined || now === undefined || v < now;
      return cut ? [`${k} ${to[k]} (${hard[k] === undefined ? 'unlimited' : hard[k]} now)`] : [];
    });
}

/**
 * `gpu-reflex quota rollback`: each gpu-reflex quota (of `namespaces`, or all) goes back to the
 * values its last rewrite replaced, and is held from further rewrites for `holdMinutes`. The
 * values it leaves become the new "previous", so a rollback can itself be rolled back.
 *
 * A quota gpu-reflex created (previous `null`, or `{}` as written before 2026-12) goes back to
 * absence: it is deleted (with the resourceVersion read), not emptied, and not held — an empty or
 * absent quota held for an hour would leave the namespace unlimited that long; the rewriter writes
 * it again at its next round. Going back below what a namespace uses (the quota's status.used), or
 * cutting a value whose usage status.used does not give, is refused unless `force`, and said either way.
 */
export async function rollbackQuotas(
  deps: Omit<QuotaDeps, 'nodes' | 'pods' | 'leases' | 'holder'>,
  namespaces: readonly string[] | undefined,
  holdMinutes: number,
  opts: { force?: boolean } = {},
): Promise<RollbackOutcome> {
  const now = deps.clock.now();
  const mine = (await deps.quotas.listQuotas()).filter(
    (q) => q.name === deps.config.quotaName && (namespaces === undefined || namespaces.includes(q.namespace)),
  );
  const out: RollbackOutcome = { restored: [], skipped: [], refused: [] };
  for (const ns of namespaces ?? [])
    if (!mine.some((q) => q.namespace === ns))
      out.skipped.push({ namespace: ns, why: `no ResourceQuota ${deps.config.quotaName} there` });
  for (const q of mine.sort((a, b) => a.namespace.localeCompare(b.namespace))) {
    const raw = q.annotations?.[PREVIOUS_HARD_ANNOTATION];
    let previous: Record<string, string> | null;
    try {
      previous = JSON.parse(raw ?? 'undefined') as Record<string, string> | null;
      if (typeof previous !== 'object' || Array.isArray(previous)) throw new Error('not an object');
    } catch {
      out.skipped.push({
        namespace: q.namespace,
        why: `no readable ${PREVIOUS_HARD_ANNOTATION} annotation: nothing to go back to`,
      });
      continue;
    }
    const created = previous === null || Object.keys(previous).length === 0;
    const to = previous ?? {};
    const below = created ? [] : belowUsage(to, q.used);
    const unknown = created ? [] : unweighed(to, q.hard, q.used);
    const whys = [
      ...(below.length > 0 ? [`going back would put it below what it uses: ${below.join(', ')}`] : []),
      ...(unknown.length > 0
        ? [
            'going back would cut it where its usage is unknown (the quota’s status has no used for it yet): ' +
              unknown.join(', '),
          ]
        : []),
    ];
    const warnings: string[] = [];
    if (whys.length > 0) {
      const why = whys.join('; ');
      if (!opts.force) {
        out.refused.push({
          namespace: q.namespace,
          why: `${why}; nothing changed (gpu-reflex quota rollback --force to roll back anyway)`,
        });
        continue;
      }
      warnings.push(`${why}: its running pods stay, new ones are refused until they fit`);
    }
    const until = new Date(now + holdMinutes * 60_000).toISOString();
    if (created) await deps.quotas.deleteQuota(q.namespace, q.name, q.resourceVersion);
    else
      await deps.quotas.applyQuota(q.namespace, q.name, {
        hard: to,
        labels: { ...MANAGED_BY },
        // The values restored are gpu-reflex's own from here: once the hold ends they are no one's hand edit.
        annotations: {
          [PREVIOUS_HARD_ANNOTATION]: JSON.stringify(q.hard),
          [HOLD_UNTIL_ANNOTATION]: until,
          [WRITTEN_HARD_ANNOTATION]: JSON.stringify(to),
        },
        // Only over the values read (they are the previous-hard written here).
        basis: q.hard,
      });
    const changes: EventChange[] = [...new Set([...Object.keys(to), ...Object.keys(q.hard)])]
      .filter((k) => to[k] !== q.hard[k])
      .sort()
      .map((k) => ({ resource: k, from: q.hard[k] ?? null, to: to[k] ?? null }));
    const reason = created
      ? 'rolled back by a person: gpu-reflex had created this quota, so it is deleted; rewrite-quotas writes it ' +
        'again at its next round (take the namespace out of the teams file to keep it away)'
      : `rolled back by a person to the values before the last rewrite; held from rewrites until ${until}`;
    if (changes.length > 0) {
      // Published once the quota is written (an event only for a write made). A refusal the bus may lift is
      // not the rollback's failure: the quota is already back, and a person running the rollback again would
      // roll it back to the rewrite's values (they are its previous now), the namespaces after it untouched
      // meanwhile. The event goes to the namespace's outbox, which rewrite-quotas's next round publishes (run.ts).
      const event = quotaEvent(deps, {
        namespace: q.namespace,
        changes,
        reason: [reason, ...warnings].join('; '),
        now,
      });
      try {
        await deps.publisher.publish([event]);
      } catch (err) {
        if (!isRetryable(err)) throw err;
        const kept = await record(deps, q.namespace, event).then(
          () => true,
          (e: unknown) => (deps.logger.error('quota rollback: outbox not written', { error: e }), false),
        );
        deps.logger.error(
          kept
            ? 'quota rollback: Quota Rewritten not published: rewrite-quotas publishes it at its next round'
            : 'quota rollback: Quota Rewritten not published, and lost',
          { namespace: q.namespace, error: err },
        );
      }
    }
    out.restored.push({ namespace: q.namespace, from: q.hard, to, deleted: created, warnings });
  }
  return out;
}
