/**
 * The data planned maintenance decides on and decides (maintenance.ts): what the cloud warns of, what the pool's
 * record keeps of a node being prepared between rounds, the facts of a round and its steps.
 */

export type WarningKind = 'maintenance' | 'preemption';

/** What the cloud says will happen to a node's instance. */
export interface CapacityWarning {
  node: string;
  instanceId: string;
  kind: WarningKind;
  /** `SystemMaintenance.Reboot`…, or `Recycling` for a spot interruption. */
  type: string;
  /** Event id (`e-…`), or `spot:<instance>` for a spot interruption. */
  eventId: string;
  /** When the capacity goes (ms): the event's NotBefore, or the notice plus 5 minutes. */
  deadline: number;
}

/** A node being prepared, as the pool's record keeps it between rounds. */
export interface TrackedNode {
  eventId: string;
  type: string;
  kind: WarningKind;
  instanceId: string;
  deadline: number;
  /** When gpu-reflex cordoned it (ms). */
  since: number;
  /** A node was asked of the pool for it (false: none was, or ACK refused the size asked: `noReplacement`). */
  replacement: boolean;
  /**
   * The pool size asked for its replacement: ACK refusing a size change that takes the pool to it (grow.ts
   * `refusedSize`) refused its replacement. Absent on a record written before it was kept, or with no replacement.
   */
  asked?: number;
  /**
   * Why it has no replacement: none was asked at prepare (the pool at its max, sold out, held…), or ACK refused the
   * size asked for it (`asked` set). One not asked is asked on a later round once its pool may grow again (stock
   * back, the hold lifted), while it is not yet drained; a refused one is not (the refusal's cooldown).
   */
  noReplacement?: string;
  /** gpu-reflex cordoned it (it was schedulable): only then is it uncordoned on return. */
  ownCordon: boolean;
  /**
   * The pool's members when its replacement was asked, by name: any other member is a new node. Absent on a record
   * written before it was kept: no node is known to be its replacement, so it is drained by its deadline.
   */
  before?: string[];
  /**
   * Nodes the pool still owed when its replacement was asked (its desired size above its members then: a scale-out's
   * nodes still booting): the first that new come for those, its own is the one beyond. ACK tells no node's request,
   * so this is the count of new nodes, each known new by name. Absent on a record written before it was kept: no node
   * is known to be its replacement, so it is drained by its deadline.
   */
  owed?: number;
  /** When its event was first seen over (no longer listed) while it was not Ready (ms): how long it has been down. */
  over?: number;
  /** When a person was told it is back Ready without its GPUs, with them unknown, or not Ready again (ms): once. */
  told?: number;
}

export interface MaintenancePolicy {
  /** The node is empty at least this long before its deadline. */
  drainBeforeMinutes: number;
  /** Preparing (cordon, replacement) starts this long before the drain deadline. */
  prepareMinutes: number;
}

export interface MaintenancePool {
  id: string;
  desired: number;
  max: number;
  /** Why no replacement may be bought (the spending limit, the pool held: its last nodes did not arrive), if so. */
  noReplacement?: string;
}

export interface MaintenanceFacts {
  now: number;
  policy: MaintenancePolicy;
  /** undefined: the cloud could not be read this round (unknown, not "no event"). */
  warnings: CapacityWarning[] | undefined;
  /** node → tracked, across every managed pool. */
  tracked: Readonly<Record<string, TrackedNode>>;
  /**
   * Members of managed pools: node → its pool, whether Ready, whether it advertises its pool's GPUs (arrivals.ts
   * `advertisesGpus`; undefined when the pool's GPUs cannot be known: its type unread), whether cordoned, and who
   * else holds it (remediation's state label or taint), if anyone, and its ECS instance (from its providerID;
   * undefined when that cannot be read).
   */
  nodes: ReadonlyMap<
    string,
    { pool: string; ready: boolean; gpus?: boolean; unschedulable?: boolean; heldBy?: string; instanceId?: string }
  >;
  pools: readonly MaintenancePool[];
}

export type MaintenanceStep =
  | { kind: 'prepare'; node: string; pool: string; tracked: TrackedNode; why: string }
  /** Prepared with no replacement, its pool may grow now: its replacement is asked after all (`tracked` rewritten). */
  | { kind: 'ask'; node: string; pool: string; tracked: TrackedNode; why: string }
  | { kind: 'cordon'; node: string; pool: string; why: string }
  | { kind: 'drain'; node: string; pool: string; why: string }
  | { kind: 'return'; node: string; pool: string; why: string }
  /** Its event is over, yet it is kept cordoned (no GPUs, unknown, not Ready again): `tell` a person, once. */
  | { kind: 'keep'; node: string; pool: string; why: string; tell: boolean; ready: boolean }
  /**
   * Nothing done this round: its event is over and it restarts (not Ready yet; `over` is recorded when first seen
   * so), or its instance cannot be read (not known to be the node prepared).
   */
  | { kind: 'wait'; node: string; pool: string; why: string; over?: number }
  | { kind: 'forget'; node: string; pool: string; why: string };

export interface MaintenancePlan {
  steps: MaintenanceStep[];
  /** Pools to grow for replacements: pool → the new desired size and the nodes it stands in for. */
  grow: Record<string, { from: number; to: number; nodes: string[] }>;
  /** Replacements not bought, with why (the pool is at its max, the spending limit). */
  refused: { node: string; pool: string; why: string }[];
}
