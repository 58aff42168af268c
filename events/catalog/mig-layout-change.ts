/**
 * `MIG Layout Change` — a node's MIG layout planned, applied, or failed (example: ./mig-layout-change.example.json).
 */
import * as z from 'zod';
import { actorBase, count, GpuUuid, MigProfile, NodeName } from '../common.ts';

export const MIG_LAYOUT_CHANGE = 'MIG Layout Change';

/** Profile → count, e.g. `{"3g.40gb": 1, "2g.20gb": 2}`. */
const ProfileCounts = z.record(MigProfile, count());

export const MigLayoutChangeDetailSchema = z
  .object({
    ...actorBase,
    node: NodeName,
    /** The mig-parted config name set in the node label `nvidia.com/mig.config`. */
    config: z.string().min(1).max(63),
    state: z.enum(['planned', 'pending', 'success', 'failed', 'awaiting-approval']),
    gpus: z
      .array(z.object({ index: count(), uuid: GpuUuid.optional(), from: ProfileCounts, to: ProfileCounts }).strict())
      .min(1)
      .max(16),
    /** Pending pods this layout is meant to serve, by resource name (`nvidia.com/mig-1g.10gb`). */
    demand: z.record(z.string(), count()).optional(),
    evictedPods: count(),
    /** Pods preempted for this layout (lower priority, by policy), evicted before the relayout. */
    preempted: z
      .array(
        z
          .object({
            namespace: z.string().min(1).max(63),
            name: z.string().min(1).max(253),
            priority: z.number().int().optional(),
          })
          .strict(),
      )
      .max(64)
      .optional(),
    reason: z.string().min(1).max(2048),
    dryRun: z.boolean(),
  })
  .strict();
export type MigLayoutChangeDetail = z.infer<typeof MigLayoutChangeDetailSchema>;
