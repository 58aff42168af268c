/**
 * What a node says about gpu-reflex's hold on it, read by every reflex (remediation writes them;
 * the MIG rebalancer, the pool autoscaler and the quota rewriter leave such nodes alone or count
 * them out; chat shows them).
 */

/** `quarantined`, `draining`, `awaiting-repair`, `awaiting-approval`; absent: healthy (remediate/core/state.ts). */
export const STATE_LABEL = 'gpu-reflex.io/state';

/** The taint remediation puts on a node it takes out of scheduling, unless a policy names another. */
export const DEFAULT_TAINT_KEY = 'gpu-reflex.io/unhealthy';

/**
 * JSON list of the node's GPUs remediation holds out of service: whole GPUs by UUID (`GPU-…`), MIG
 * instances by UUID (`MIG-…`) or `GPU-…/gi<n>` (remediate/core/state.ts writes it; the quota
 * rewriter counts the whole GPUs out of capacity).
 */
export const QUARANTINED_GPUS_ANNOTATION = 'gpu-reflex.io/quarantined-gpus';

/** STATE_LABEL values of a node remediation is taking out whole (remediate/core/state.ts NODE_PHASES). */
export const NODE_OUT_PHASES = ['draining', 'awaiting-repair'] as const;
