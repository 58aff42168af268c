/**
 * The idle-GPU policy (IDLE_POLICY_FILE, YAML or JSON; every field optional), validated with zod so
 * a mistake names its field. What counts as idle, for how long, and what happens then — per node
 * pool and per namespace, the namespace's words winning over the pool's, the pool's over the defaults:
 *
 *   thresholdPercent: 5      # idle: utilization and memory activity (max over each window) under this
 *   windowMinutes: 120       # … for this long: the owner is told, with the GPU-hours and their cost
 *   teamLabel: team          # the pod label that names its team (absent on a pod: its namespace)
 *   currency: CNY
 *   prices:                  # per GPU-hour, by the node's instance type (node.kubernetes.io/instance-type)
 *     ecs.gn7i-c8g1.2xlarge: 9.8
 *   pools:                   # by ACK node pool (label alibabacloud.com/nodepool-id)
 *     np-notebooks: { windowMinutes: 60 }
 *   namespaces:
 *     research: { evict: { afterMinutes: 60 } }   # opted in: evicted 60 min after the owner was told
 *     lab: { evict: { afterMinutes: 60, approvalMinutes: 120 } }  # … only once a person approves
 *     prod-serving: { ignore: true }              # never watched
 *     notebooks: { lend: true }                   # told: the idle GPU is free capacity in the quota planner
 *
 * Eviction happens only where a namespace (or pool) says `evict`: without it gpu-reflex only tells.
 * A pod opts out by annotation `gpu-reflex.io/idle-policy: exempt`.
 */
import * as z from 'zod';
import { parseConfigText } from '../../lib/yaml-text.ts';

/** What a pool or namespace may set; unset fields fall through to the next level. */
const Rule = z
  .object({
    thresholdPercent: z.number().min(0).max(100).optional(),
    windowMinutes: z
      .number()
      .int()
      .min(1)
      .max(7 * 24 * 60)
      .optional(),
    /** Opt-in eviction: the pod is evicted this long after the owner was told, if still idle. */
    evict: z
      .object({
        afterMinutes: z
          .number()
          .int()
          .min(0)
          .max(7 * 24 * 60),
        /**
         * Evicted only after a person approves (chat `approve <id>`): asked at the deadline, the
         * question open this many minutes; rejected or expired, the pod is not evicted for this idle run.
         */
        approvalMinutes: z
          .number()
          .int()
          .min(1)
          .max(7 * 24 * 60)
          .optional(),
      })
      .strict()
      .optional(),
    /** Not watched at all (no event, no notice, no eviction). */
    ignore: z.boolean().optional(),
    /** Once the owner was told, the idle device counts as free capacity in the quota planner (docs/cost.md). */
    lend: z.boolean().optional(),
  })
  .strict();

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** In `Date.getUTCDay()` order: sunday is 0. */
export const WEEKDAYS = ['sunday', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday'] as const;

export const IdlePolicySchema = z
  .object({
    thresholdPercent: z.number().min(0).max(100).default(5),
    windowMinutes: z
      .number()
      .int()
      .min(1)
      .max(7 * 24 * 60)
      .default(120),
    /** A window that starts later than this after the last one ended breaks the run: unseen time is not idle. */
    gapMinutes: z.number().int().min(1).max(60).default(5),
    teamLabel: z.string().min(1).max(317).default('team'),
    currency: z
      .string()
      .regex(/^[A-Z]{3}$/, 'an ISO 4217 code such as CNY or USD')
      .default('CNY'),
    prices: z.record(z.string().min(1).max(128), z.number().min(0)).default({}),
    pools: z.record(z.string().min(1).max(128), Rule).default({}),
    namespaces: z.record(z.string().regex(DNS_LABEL, 'a namespace name'), Rule).default({}),
    /**
     * Opt-in: each team's GPU cost of the past week, told in chat once a week (weekly.ts), at `hourUtc`
     * on `day`; `teams` limits it to those teams (absent: every team with GPU pods in the week).
     */
    weeklyReport: z
      .object({
        day: z.enum(WEEKDAYS).default('monday'),
        hourUtc: z.number().int().min(0).max(23).default(9),
        teams: z.array(z.string().min(1).max(253)).min(1).optional(),
      })
      .strict()
      .optional(),
  })
  .strict();

export type IdlePolicy = z.output<typeof IdlePolicySchema>;

/** The rule that applies to one pod: the defaults, then its pool's, then its namespace's. */
export interface EffectiveRule {
  thresholdPercent: number;
  windowMs: number;
  /** Absent: never evicted, only told. */
  evictAfterMs?: number;
  /** Present: the eviction waits for an approval open this long (evict.approvalMinutes). */
  approvalMs?: number;
  ignore: boolean;
  /** The idle device is lent to the quota planner once the owner was told. */
  lend: boolean;
}

export function ruleFor(policy: IdlePolicy, namespace: string, pool: string | undefined): EffectiveRule {
  const levels = [pool !== undefined ? policy.pools[pool] : undefined, policy.namespaces[namespace]];
  let r: EffectiveRule = {
    thresholdPercent: policy.thresholdPercent,
    windowMs: policy.windowMinutes * 60_000,
    ignore: false,
    lend: false,
  };
  for (const l of levels) {
    if (!l) continue;
    r = {
      thresholdPercent: l.thresholdPercent ?? r.thresholdPercent,
      windowMs: l.windowMinutes !== undefined ? l.windowMinutes * 60_000 : r.windowMs,
      ignore: l.ignore ?? r.ignore,
      lend: l.lend ?? r.lend,
      ...(l.evict
        ? {
            evictAfterMs: l.evict.afterMinutes * 60_000,
            ...(l.evict.approvalMinutes !== undefined ? { approvalMs: l.evict.approvalMinutes * 60_000 } : {}),
          }
        : r.evictAfterMs !== undefined
          ? { evictAfterMs: r.evictAfterMs, ...(r.approvalMs !== undefined ? { approvalMs: r.approvalMs } : {}) }
          : {}),
    };
  }
  return r;
}

export class IdlePolicyError extends Error {
  override name = 'IdlePolicyError';
}

export function parseIdlePolicy(text: string, source = 'idle policy'): IdlePolicy {
  return parseConfigText(text, source, IdlePolicySchema, (m) => new IdlePolicyError(m));
}

export const DEFAULT_IDLE_POLICY: IdlePolicy = IdlePolicySchema.parse({});
