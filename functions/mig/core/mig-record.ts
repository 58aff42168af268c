import * as z from 'zod';

/**
 * The node's relayout record (annotation gpu-reflex.io/mig-rebalance) and the labels mig-manager reads
 * and writes (rebalance.ts walks the protocol).
 */
export const MIG_CONFIG_LABEL = 'nvidia.com/mig.config';
export const MIG_CONFIG_STATE_LABEL = 'nvidia.com/mig.config.state';
export const MIG_REBALANCE_ANNOTATION = 'gpu-reflex.io/mig-rebalance';

const Layout = z.array(z.string().min(1)).max(7);

export const MigRecordSchema = z
  .object({
    v: z.literal(1),
    phase: z.enum(['writing', 'applying', 'failed']),
    config: z.string().min(1).max(63),
    /** The config label before ours (restored on failure); null when there was none. */
    previous: z.string().nullable(),
    /** We cordoned the node (it was schedulable): we uncordon it after. */
    cordoned: z.boolean(),
    since: z.iso.datetime(),
    gpus: z
      .array(z.object({ gpu: z.number().int().min(0), from: Layout, to: Layout }).strict())
      .min(1)
      .max(16),
    /** The whole node's layout, GPU by GPU, as written into the mig-parted config. */
    layout: z.array(Layout).max(16),
    unblocks: z.array(z.string()).max(64),
    /** Pods preempted for this relayout: evicted before the label is set. */
    preempt: z
      .array(z.object({ namespace: z.string().min(1), name: z.string().min(1), uid: z.string().optional() }).strict())
      .max(64)
      .optional(),
    reason: z.string().max(1024).optional(),
    /**
     * Our label write also removed the last run's `nvidia.com/mig.config.state`, so any state seen after
     * it was written by mig-manager for this change (it writes `pending` before anything else).
     */
    stateCleared: z.boolean().optional(),
    /** `pending` (or `rebooting`) was seen after our label write. */
    sawPending: z.boolean().optional(),
  })
  .strict();
export type MigRecord = z.infer<typeof MigRecordSchema>;

/**
 * The record on a node, or undefined; a corrupt one is `problem`, which run.ts reads as a relayout under way (its
 * node is not planned), never as absent.
 */
export function readMigRecord(annotations: Readonly<Record<string, string>>): { record?: MigRecord; problem?: string } {
  const raw = annotations[MIG_REBALANCE_ANNOTATION];
  if (raw === undefined) return {};
  try {
    const parsed = MigRecordSchema.safeParse(JSON.parse(raw));
    return parsed.success
      ? { record: parsed.data }
      : { problem: `${MIG_REBALANCE_ANNOTATION} does not match its format: ${parsed.error.issues[0]?.message ?? ''}` };
  } catch {
    return { problem: `${MIG_REBALANCE_ANNOTATION} is not JSON` };
  }
}
