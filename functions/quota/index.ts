/**
 * The quota rewriter's public entry: what chatops uses for `quota show/plan/rollback` (no other
 * function imports the rewriter: test/contract/layers.test.ts).
 */
export type { QuotaConfig } from './core/config.ts';
export { planQuotas } from './core/planner.ts';
export { quotaFacts } from './facts.ts';
export { HOLD_UNTIL_ANNOTATION, rollbackQuotas } from './run.ts';
export { quotaConfigFromEnv } from './wiring.ts';
