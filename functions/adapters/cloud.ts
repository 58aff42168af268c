/**
 * The cloud work a plan can carry (functions/lib/plan.ts `Actions.cloud`) and the port the applier
 * (functions/lib/apply.ts) carries it out through; adapters/alicloud/repair.ts implements it on ACK
 * and ECS. Declared here, with the port, so the adapter imports no kernel
 * (test/contract/layers.test.ts); plan.ts and apply.ts name both too.
 */

/**
 * Cloud work (repair, pool sizes). A replacement is two steps, capacity first: `grow` sets the
 * node's pool to `to` nodes (absolute, so a retry cannot add two; sent only while the pool still
 * has `from`), then, once a new node is Ready, `remove` takes the node's instance out of its pool
 * and releases it.
 */
export type CloudAction =
  | { kind: 'reboot'; node: string }
  | { kind: 'replace'; step: 'grow'; node: string; pool: string; from: number; to: number }
  | { kind: 'replace'; step: 'remove'; node: string; pool: string; instanceId: string }
  | { kind: 'scale'; pool: string; desired: number };

/**
 * Port for cloud actions (repair, scaling). Each is idempotent; `false` = already so. An
 * asynchronous one may answer its task id, and a message where "not done" needs saying why.
 */
export interface CloudOps {
  run(action: CloudAction): Promise<boolean | { done: boolean; taskId?: string; message?: string }>;
}
