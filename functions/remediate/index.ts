/**
 * Remediation's public entry: what another part may use (chatops drives remediation through it;
 * no other function imports remediation at all: test/contract/layers.test.ts). Its pure decision
 * core (core/), and the edge chat needs: `remediate` (run one event through the reflex) and the
 * function's configuration from the environment.
 */
export {
  DEFAULT_POLICY,
  PolicySchema,
  resolveRule,
  poolOf,
  poolLimits,
  type Policy,
  type Rule,
  type RuleTrigger,
} from './core/policy.ts';
export { loadPolicy, PolicyFileError } from './core/policy-file.ts';
export {
  parseNodeState,
  encodeNodeState,
  emptyState,
  LIMITS,
  STATE_LABEL,
  HISTORY_ANNOTATION,
  QUARANTINED_GPUS_ANNOTATION,
  REPAIRED_AT_ANNOTATION,
  type NodeState,
  type Incident,
  type EncodedNodeState,
  type Taint,
} from './core/state.ts';
export { planRemediation } from './core/plan.ts';
export { poolFacts, poolAllowance, checkBlastRadius } from './core/blast-radius.ts';
export { planSweep, type SweepFacts, type SweepNodeFacts, type SweepPlan } from './core/sweep.ts';
export { toRemediationDetail, remediationEventId, approvalIdOf, type StepResult } from './core/detail.ts';
export { OPERATOR_REQUEST } from './core/types.ts';
export { heldNodes, fenceWords, type HeldNode } from './held.ts';
export { remediate } from './run.ts';
export { remediationConfig } from './wiring.ts';
export type * from './core/types.ts';
