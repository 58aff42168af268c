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
import { createHash } from 'node:crypto';
import { QUOTA_REWRITTEN, SCHEMA_VERSION, SOURCES, type QuotaRewrittenDetail } from '../../events/index.ts';
import type { EventPublisher, PublishedEvent } from '../adapters/bus.ts';
import type { Notice, Notifier } from '../adapters/chat/notifier.ts';
import type { Clock } from '../adapters/clock.ts';
import type { Json, LimitItem, QuotaInfo } from '../adapters/kube/model.ts';
import type { LeaseOps, NodeOps, PodOps, QuotaOps, StateStore } from '../adapters/kube/ports.ts';
import { parseQuantity } from '../adapters/kube/quantity.ts';
import type { Logger } from '../adapters/logger.ts';
import { mergeOutbox } from '../lib/outbox.ts';
import { withLease } from '../lib/reflex.ts';
import { resourcesOf, type QuotaConfig } from './core/config.ts';
import { planQuotas, quotaKey, type NamespaceQuota, type QuotaPlan } from './core/planner.ts';
import { quotaFacts, type CapacityOut } from './facts.ts';
import { idleLending, lendIdle, loanWords, type IdleLending } from './idle-lending.ts';

export const PREVIOUS_HARD_ANNOTATION = 'gpu-reflex.io/previous-hard';
export const HOLD_UNTIL_ANNOTATION = 'gpu-reflex.io/quota-hold-until';
export const MANAGED_BY = { 'app.kubernetes.io/managed-by': 'gpu-reflex' } as const;

export interface QuotaDeps {
  nodes: Pick<NodeOps, 'list'>;
  pods: Pick<PodOps, 'list'>;
  quotas: QuotaOps;
  state: StateStore;
  leases: LeaseOps;
  publisher: EventPublisher;
  notifier: Notifier;
  clock: Clock;
  logger: Logger;
  holder: string;
  config: QuotaConfig;
}

export interface QuotaOutcome {
  plan: QuotaPlan;
  /** Namespaces whose quota was written this round. */
  changed: string[];
  /** Namespaces left alone: a rollback holds them. */
  held: string[];
  /** Idle devices counted as free this round (idle-lending.ts), and the records' loans not taken. */
  lending?: IdleLending;
}

const key = (ns: string) => `quota.${ns}`;

type EventChange = QuotaRewrittenDetail['changes'][number];

const changesOf = (nq: NamespaceQuota): EventChange[] =>
  nq.changes.map((c) => ({ resource: c.key, from: c.from === null ? null : String(c.from), to: String(c.to) }));

function quotaEvent(
  deps: Pick<QuotaDeps, 'clock' | 'config'>,
  namespace: string,
  changes: EventChange[],
  reason: string,
  now: number,
  capacity?: QuotaRewrittenDetail['capacity'],
): PublishedEvent {
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
function capacityOf(plan: QuotaPlan, out: readonly CapacityOut[]): NonNullable<QuotaRewrittenDetail['capacity']> {
  return {
    resources: Object.entries(plan.pool)
      .filter(([, p]) => !p.unit)
      .slice(0, 64)
      .map(([resource, p]) => ({ resource, capacity: p.capacity, shared: p.shared })),
    out: out.slice(0, 64).map((o) => ({ ...o, why: o.why.slice(0, 256) })),
  };
}

/** `capacity nvidia.com/gpu 7: a100-0: 1 GPU fenced by remediation`, when something is left out. */
function capacityWords(c: NonNullable<QuotaRewrittenDetail['capacity']>): string[] {
  if (c.out.length === 0) return [];
  const gpu = c.resources.find((r) => r.resource === 'nvidia.com/gpu') ?? c.resources[0];
  return [
    `capacity${gpu ? ` ${gpu.resource} ${gpu.capacity}` : ''}: ${c.out.map((o) => `${o.node}: ${o.why}`).join(', ')}`,
  ];
}

/** Publishes what a namespace's outbox holds, then clears what went (the outbox rule). */
async function flush(deps: QuotaDeps, ns: string, pending: PublishedEvent[]): Promise<void> {
  if (pending.length === 0) return;
  await deps.publisher.publish(pending);
  const sent = new Set(pending.map((e) => String(e.detail.eventId)));
  await deps.state.update(key(ns), (cur) => {
    const left = (((cur ?? {}) as { events?: PublishedEvent[] }).events ?? []).filter(
      (e) => !sent.has(String(e.detail.eventId)),
    );
    return left.length > 0 ? ({ events: left } as unknown as Json) : undefined;
  });
}

async function record(deps: QuotaDeps, ns: string, event: PublishedEvent): Promise<PublishedEvent[]> {
  const written = (await deps.state.update(
    key(ns),
    (cur) =>
      ({
        events: mergeOutbox(((cur ?? {}) as { events?: PublishedEvent[] }).events ?? [], [event]),
      }) as unknown as Json,
  )) as { events?: PublishedEvent[] } | undefined;
  return written?.events ?? [event];
}

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
      const plan = planQuotas(deps.config, lendIdle(facts, lending));
      const capacity = capacityOf(plan, facts.out);
      const now = deps.clock.now();
      const changed: string[] = [];
      const held: string[] = [];
      const lr = limitItems(deps.config);
      for (const nq of plan.namespaces) {
        // What an earlier round decided and never got out goes first (read once, with the round).
        const unsent = ((stored[key(nq.namespace)] ?? {}) as { events?: PublishedEvent[] }).events ?? [];
        if (unsent.length > 0) await flush(deps, nq.namespace, unsent);
        const current = quotas.find((q) => q.namespace === nq.namespace && q.name === deps.config.quotaName);
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
        const reason = [nq.reason, ...loanWords(lending, nq.namespace), ...capacityWords(capacity)].join('; ');
        const event = quotaEvent(deps, nq.namespace, changesOf(nq), reason, now, capacity);
        const events = await record(deps, nq.namespace, event);
        await deps.quotas.applyQuota(nq.namespace, deps.config.quotaName, {
          hard: hardStrings(nq, current),
          labels: { ...MANAGED_BY },
          // `null`: there was no quota, so a rollback deletes this one (rollbackQuotas).
          annotations: { [PREVIOUS_HARD_ANNOTATION]: current ? JSON.stringify(current.hard) : 'null' },
        });
        await flush(deps, nq.namespace, events);
        changed.push(nq.namespace);
        deps.logger.info('rewrite-quotas', { namespace: nq.namespace, changes: nq.changes });
      }
      // A warning is news when the quotas change with it; every 5 minutes after that it is not.
      for (const w of plan.warnings)
        (changed.length > 0 ? deps.logger.warn : deps.logger.info).call(deps.logger, 'rewrite-quotas', { warning: w });
      if (changed.length > 0) {
        const lines = plan.namespaces
          .filter((n) => changed.includes(n.namespace))
          .map((n) => `${n.namespace}: ${n.changes.map((c) => `${c.key} ${c.from ?? 'unset'} → ${c.to}`).join(', ')}`);
        const notice: Notice = {
          title: `gpu-reflex: rewrote ${changed.length} team quota${changed.length === 1 ? '' : 's'}`,
          text: [...lines, ...plan.warnings].join('\n').slice(0, 1000),
          severity: plan.warnings.length > 0 ? 'warning' : 'info',
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

export interface RolledBack {
  namespace: string;
  from: Record<string, string>;
  to: Record<string, string>;
  /** gpu-reflex had created the quota: it was deleted, not emptied, and is not held. */
  deleted: boolean;
  /** Said when `force` let a rollback go below what the namespace uses. */
  warnings: string[];
}

export interface RollbackOutcome {
  restored: RolledBack[];
  skipped: { namespace: string; why: string }[];
  /** Left alone: going back would put the namespace below what it uses (and `force` was not given). */
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
 * `gpu-reflex quota rollback`: each gpu-reflex quota (of `namespaces`, or all) goes back to the
 * values its last rewrite replaced, and is held from further rewrites for `holdMinutes`. The
 * values it leaves become the new "previous", so a rollback can itself be rolled back.
 *
 * A quota gpu-reflex created (previous `null`, or `{}` as written before 2026-12) goes back to
 * absence: it is deleted (with the resourceVersion read), not emptied, and not held — an empty or
 * absent quota held for an hour would leave the namespace unlimited that long; the rewriter writes
 * it again at its next round. Going back below what a namespace uses (the quota's status.used) is
 * refused unless `force`, and said either way.
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
    const warnings: string[] = [];
    if (below.length > 0) {
      const why = `going back would put it below what it uses: ${below.join(', ')}`;
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
        annotations: { [PREVIOUS_HARD_ANNOTATION]: JSON.stringify(q.hard), [HOLD_UNTIL_ANNOTATION]: until },
      });
    const changes: EventChange[] = [...new Set([...Object.keys(to), ...Object.keys(q.hard)])]
      .filter((k) => to[k] !== q.hard[k])
      .sort()
      .map((k) => ({ resource: k, from: q.hard[k] ?? null, to: to[k] ?? null }));
    const reason = created
      ? 'rolled back by a person: gpu-reflex had created this quota, so it is deleted; rewrite-quotas writes it ' +
        'again at its next round (take the namespace out of the teams file to keep it away)'
      : `rolled back by a person to the values before the last rewrite; held from rewrites until ${until}`;
    if (changes.length > 0)
      await deps.publisher.publish([quotaEvent(deps, q.namespace, changes, [reason, ...warnings].join('; '), now)]);
    out.restored.push({ namespace: q.namespace, from: q.hard, to, deleted: created, warnings });
  }
  return out;
}

/** The resources' quota keys, for tables. */
export const keysOf = (config: QuotaConfig) => resourcesOf(config).map(quotaKey);
