/**
 * The quota rewriter (`rewrite-quotas`): on a schedule and when capacity changes (a remediation,
 * a pool scaled, a MIG relayout), holding the Lease `rewrite-quotas`: read nodes, pods and quotas
 * → plan (core/planner.ts, pure) → per namespace whose quota changes: record its Quota Rewritten
 * event (the outbox, state key `quota.<namespace>`), write the ResourceQuota (keeping the values
 * it replaces in an annotation, for `gpu-reflex quota rollback`) and the LimitRange, publish,
 * clear → one chat notice for the round.
 *
 * A quota a person rolled back is held (annotation `gpu-reflex.io/quota-hold-until`): left alone
 * until then, and said so.
 */
import type { PublishedEvent } from '../adapters/bus.ts';
import { isRetryable } from '../adapters/errors.ts';
import type { Notice } from '../adapters/chat/notifier.ts';
import type { LimitItem, QuotaInfo } from '../adapters/kube/model.ts';
import { withLease } from '../lib/lease.ts';
import { resourcesOf, type QuotaConfig } from './core/config.ts';
import { quotaKey, type NamespaceQuota } from './core/planner.ts';
import {
  HOLD_UNTIL_ANNOTATION,
  MANAGED_BY,
  PREVIOUS_HARD_ANNOTATION,
  WRITTEN_HARD_ANNOTATION,
  type QuotaDeps,
  type QuotaOutcome,
} from './deps.ts';
import { planQuotasAsRead, quotaFacts, type QuotaEdit } from './facts.ts';
import { idleLending, lendIdle, loanWords } from './idle-lending.ts';
import { flush, key, record } from './namespace-outbox.ts';
import { capacityOf, capacityWords, changesOf, landed, quotaEvent } from './quota-event.ts';

// Importable from here as before.
export {
  HOLD_UNTIL_ANNOTATION,
  MANAGED_BY,
  PREVIOUS_HARD_ANNOTATION,
  type QuotaDeps,
  type QuotaOutcome,
} from './deps.ts';
export { rollbackQuotas, type RollbackOutcome, type RolledBack } from './rollback.ts';

function limitItems(config: QuotaConfig): LimitItem[] | undefined {
  const lr = config.limitRange;
  if (!lr || (!lr.default && !lr.max)) return undefined;
  const str = (m: Record<string, number> | undefined) =>
    m ? Object.fromEntries(Object.entries(m).map(([k, v]) => [k, String(v)])) : undefined;
  const d = str(lr.default);
  const max = str(lr.max);
  return [{ type: 'Container', ...(d ? { default: d, defaultRequest: d } : {}), ...(max ? { max } : {}) }];
}

function hardStrings(nq: NamespaceQuota, current: QuotaInfo | undefined): Record<string, string> {
  // Keys gpu-reflex does not manage (cpu, pods, …) are kept as they are.
  const keep = Object.fromEntries(Object.entries(current?.hard ?? {}).filter(([k]) => !(k in nq.hard)));
  return { ...keep, ...Object.fromEntries(Object.entries(nq.hard).map(([k, v]) => [k, String(v)])) };
}

/** `requests.nvidia.com/gpu 16 → 40`: what gpu-reflex wrote, and what someone made it since. */
const editWords = (edit: readonly QuotaEdit[]) =>
  edit.map((e) => `${e.key} ${e.ours ?? 'unset'} → ${e.found ?? 'unset'}`).join(', ');

export async function rewriteQuotas(deps: QuotaDeps): Promise<QuotaOutcome> {
  const empty = (): QuotaOutcome => (
    deps.logger.info('rewrite-quotas already running elsewhere'),
    { plan: { pool: {}, teams: [], namespaces: [], warnings: [] }, changed: [], held: [] }
  );
  return withLease(
    'rewrite-quotas',
    120,
    deps,
    async () => {
      const [nodes, pods, quotas, stored] = await Promise.all([
        deps.nodes.list(),
        deps.pods.list(),
        deps.quotas.listQuotas(),
        deps.state.getAll(),
      ]);
      const facts = quotaFacts(deps.config, nodes, pods, quotas);
      // Idle GPUs lent (idle-lending.ts): their owners' usage counts without them.
      const lending = idleLending(deps.config, nodes, pods, facts.out, deps.clock.now());
      const plan = planQuotasAsRead(deps.config, lendIdle(facts, lending));
      const capacity = capacityOf(plan, facts.out);
      const now = deps.clock.now();
      const changed: string[] = [];
      const held: string[] = [];
      const byHand = new Map<string, string>();
      const lr = limitItems(deps.config);
      // A refusal the bus may lift (throttling, an outage) is not the round's failure: the events stay in the
      // outbox and the next round (every 5 minutes, and on capacity events) publishes them first. Thrown, it
      // stopped the round after a quota it wrote, and the retry, finding that quota as planned, never said the
      // rewrite in chat; the namespaces after it waited. A bug (an invalid event) still throws.
      const publish = async (ns: string, pending: PublishedEvent[], send?: PublishedEvent[]) => {
        try {
          await flush(deps, ns, pending, send);
        } catch (err) {
          if (!isRetryable(err)) throw err;
          deps.logger.error('rewrite-quotas: events not published: the outbox keeps them for the next round', {
            namespace: ns,
            events: pending.length,
            error: err,
          });
        }
      };
      for (const nq of plan.namespaces) {
        // What an earlier round decided and never got out goes first (read once, with the round).
        const unsent = ((stored[key(nq.namespace)] ?? {}) as { events?: PublishedEvent[] }).events ?? [];
        const current = quotas.find((q) => q.namespace === nq.namespace && q.name === deps.config.quotaName);
        // One the quota does not say was recorded for a write that never landed: cleared, not published.
        const news = unsent.filter((e) => landed(e, current));
        if (news.length < unsent.length)
          deps.logger.warn('rewrite-quotas: a recorded Quota Rewritten whose write never landed is dropped', {
            namespace: nq.namespace,
            events: unsent.filter((e) => !news.includes(e)).map((e) => String(e.detail.eventId)),
          });
        if (unsent.length > 0) await publish(nq.namespace, unsent, news);
        const holdUntil = current?.annotations?.[HOLD_UNTIL_ANNOTATION];
        if (holdUntil && Date.parse(holdUntil) > now) {
          held.push(nq.namespace);
          continue;
        }
        if (lr)
          await deps.quotas.applyLimitRange(nq.namespace, deps.config.quotaName, {
            limits: lr,
            labels: { ...MANAGED_BY },
          });
        if (nq.changes.length === 0 && current) continue;
        // A value someone wrote since gpu-reflex's last write is theirs: the changes are counted from it
        // (planQuotasAsRead), the round puts gpu-reflex's decision back (its previous-hard keeps theirs for a rollback)
        // and says so.
        const edit = facts.edited[nq.namespace];
        if (edit) byHand.set(nq.namespace, editWords(edit));
        const reason = [
          ...(edit
            ? [`changed since gpu-reflex wrote it (${editWords(edit)}): put back to gpu-reflex's decision`]
            : []),
          nq.reason,
          ...loanWords(lending, nq.namespace),
          ...capacityWords(capacity),
        ].join('; ');
        const event = quotaEvent(deps, { namespace: nq.namespace, changes: changesOf(nq), reason, now, capacity });
        const events = await record(deps, nq.namespace, event);
        await deps.quotas.applyQuota(nq.namespace, deps.config.quotaName, {
          hard: hardStrings(nq, current),
          labels: { ...MANAGED_BY },
          // `null`: there was no quota, so a rollback deletes this one (rollbackQuotas).
          annotations: {
            [PREVIOUS_HARD_ANNOTATION]: current ? JSON.stringify(current.hard) : 'null',
            [WRITTEN_HARD_ANNOTATION]: JSON.stringify(
              Object.fromEntries(Object.entries(nq.hard).map(([k, v]) => [k, String(v)])),
            ),
          },
          // Decided on the quota as read: one a person changed since is a 409 (the next round decides again), not
          // overwritten with the round's values, its own lost to the previous-hard a rollback restores.
          basis: current ? current.hard : null,
        });
        await publish(nq.namespace, events);
        changed.push(nq.namespace);
        deps.logger.info('rewrite-quotas', { namespace: nq.namespace, changes: nq.changes });
      }
      // A warning is news when the quotas change with it; every 5 minutes after that it is not.
      for (const w of plan.warnings)
        (changed.length > 0 ? deps.logger.warn : deps.logger.info).call(deps.logger, 'rewrite-quotas', { warning: w });
      if (changed.length > 0) {
        const lines = plan.namespaces
          .filter((n) => changed.includes(n.namespace))
          .map(
            (n) =>
              `${n.namespace}: ${n.changes.map((c) => `${c.key} ${c.from ?? 'unset'} → ${c.to}`).join(', ')}` +
              (byHand.has(n.namespace)
                ? ` (someone changed it since gpu-reflex wrote it: ${byHand.get(n.namespace)}; ` +
                  `gpu-reflex quota rollback --namespace ${n.namespace} gives theirs back)`
                : ''),
          );
        const notice: Notice = {
          title: `gpu-reflex: rewrote ${changed.length} team quota${changed.length === 1 ? '' : 's'}`,
          text: [...lines, ...plan.warnings].join('\n').slice(0, 1000),
          severity: plan.warnings.length > 0 || byHand.size > 0 ? 'warning' : 'info',
        };
        await deps.notifier
          .notify(notice)
          .catch((err: unknown) => deps.logger.warn('rewrite-quotas: chat notice failed', { error: err }));
      }
      for (const r of lending.refused) deps.logger.info('rewrite-quotas: idle device not lent', { ...r });
      return { plan, changed, held, lending };
    },
    empty,
  );
}

/** The resources' quota keys, for tables. */
export const keysOf = (config: QuotaConfig) => resourcesOf(config).map(quotaKey);
