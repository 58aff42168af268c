/**
 * What a node says about gpu-reflex's hold on it, read by every reflex (remediation writes them;
 * the MIG rebalancer, the pool autoscaler and the quota rewriter leave such nodes alone or count
 * them out; chat shows them).
 */

/** `quarantined`, `draining`, `awaiting-repair`, `awaiting-approval`; absent: healthy (remediate/core/state.ts). */
export const STATE_LABEL = 'gpu-reflex.io/state';

/** The taint remediation puts on a node it takes out of scheduling, unless a policy names another. */
export const DEFAULT_TAINT_KEY = 'gpu-reflex.io/unhealthy';
