/**
 * The MIG rebalancer's public entry: what chatops uses to plan and apply a relayout (no other
 * function imports the rebalancer: test/contract/layers.test.ts).
 */
export { planTable } from './core/plan-table.ts';
export { planMig } from './core/planner.ts';
export { rebalanceMig, type MigRebalanceConfig } from './run.ts';
export { readMigFleet } from './supply.ts';
export { migConfig } from './wiring.ts';
