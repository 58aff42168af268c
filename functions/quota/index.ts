/**
 * The quota rewriter's public entry: what chatops uses for `quota show/plan/rollback` (no other
 * function imports the rewriter: test/contract/layers.test.ts).
 */
export type { QuotaConfig } from './core/config.ts';
// Counted from each quota as read (a person's edit since gpu-reflex wrote it: facts.ts), as rewrite-quotas writes.
export { planQuotasAsRead as planQuotas, quotaFacts } from './facts.ts';
export { HOLD_UNTIL_ANNOTATION, rollbackQuotas } from './run.ts';
export { quotaConfigFromEnv } from './wiring.ts';
