/** The pure decision core of remediation. The handler (I/O, adapters) imports from here. */
export { DEFAULT_POLICY, PolicySchema, resolveRule, poolOf, poolLimits, type Policy, type Rule, type RuleTrigger } from './policy.ts';
export { loadPolicy, PolicyFileError } from './policy-file.ts';
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
} from './state.ts';
export { planRemediation } from './plan.ts';
export { poolFacts, poolAllowance, checkBlastRadius } from './blast-radius.ts';
export { planSweep, type SweepFacts, type SweepNodeFacts, type SweepPlan } from './sweep.ts';
export { toRemediationDetail, remediationEventId, approvalIdOf, type StepResult } from './detail.ts';
export type * from './types.ts';
