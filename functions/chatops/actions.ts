/**
 * The chat commands that run an automation's own core: `quarantine` through remediation's planner
 * and applier (remediate/run.ts), `mig apply` through the MIG rebalancer's round (mig/run.ts),
 * `quota show` / `quota rollback` through the quota rewriter (quota/run.ts). No second
 * implementation: chat only picks the ports (the dry-run ones for `--dry-run`) and words the outcome.
 *
 * Each command lives in a file of its own; this file gathers them for run.ts and answers.ts.
 */
export type { CommandPorts } from './command-ports.ts';
export { decideHeldPlan } from './held-plans.ts';
export { migApply } from './mig-apply.ts';
export { CHAT_APPROVALS_SHARD, decidePoolScale, poolScale, type PoolPorts } from './pool-scale.ts';
export { quarantine, resolveGpu } from './quarantine.ts';
export { quotaRollback, quotaShow, ROLLBACK_HOLD_MINUTES } from './quota-actions.ts';
