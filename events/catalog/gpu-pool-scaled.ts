/** `GPU Pool Scaled` — a GPU node pool's desired size changed (example: ./gpu-pool-scaled.example.json). */
import * as z from 'zod';
import { actorBase, count } from '../common.ts';

export const GPU_POOL_SCALED = 'GPU Pool Scaled';

export const GpuPoolScaledDetailSchema = z
  .object({
    ...actorBase,
    provider: z.enum(['alicloud']),
    clusterId: z.string().min(1).max(64),
    nodepoolId: z.string().min(1).max(64),
    nodepoolName: z.string().min(1).max(128).optional(),
    instanceTypes: z.array(z.string().min(1).max(64)).max(20),
    from: count(),
    to: count(),
    state: z.enum(['requested', 'succeeded', 'failed', 'awaiting-approval']),
    taskId: z.string().max(128).optional(),
    /** Pay-as-you-go price per hour of the change (`to - from` nodes), from DescribePrice. */
    hourlyCostDelta: z
      .object({ amount: z.number(), currency: z.string().length(3) })
      .strict()
      .optional(),
    reason: z.string().min(1).max(2048),
    dryRun: z.boolean(),
  })
  .strict();
export type GpuPoolScaledDetail = z.infer<typeof GpuPoolScaledDetailSchema>;
