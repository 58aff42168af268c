/** The contract between the agent and the functions. Import from here, nothing else crosses. */
export * from './common.ts';
export * from './envelope.ts';
export * from './catalog.ts';
export * from './validate.ts';
export * from './xid.ts';
export * from './catalog/gpu-xid-error.ts';
export * from './catalog/gpu-health-changed.ts';
export * from './catalog/gpu-utilization-summary.ts';
export * from './catalog/gpu-inventory.ts';
export * from './catalog/remediation.ts';
export * from './catalog/gpu-action.ts';
export * from './mig-inventory.ts';
export * from './catalog/mig-layout-change.ts';
export * from './catalog/gpu-pool-scaled.ts';
export * from './catalog/quota-rewritten.ts';
export * from './catalog/node-labels-changed.ts';
export * from './catalog/chatops.ts';
