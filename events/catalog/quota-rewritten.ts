/** `Quota Rewritten` — a team's ResourceQuota changed (example: ./quota-rewritten.example.json). */
import { z } from 'zod';
import { actorBase } from '../common.ts';

export const QUOTA_REWRITTEN = 'Quota Rewritten';

export const QuotaRewrittenDetailSchema = z
  .object({
    ...actorBase,
    namespace: z.string().min(1).max(63),
    quota: z.string().min(1).max(253),
    /** Kubernetes quantities as strings (`"8"`, `"16Gi"`); `from: null` when the resource was not limited. */
    changes: z
      .array(
        z
          .object({ resource: z.string().min(1).max(253), from: z.string().nullable(), to: z.string().nullable() })
          .strict(),
      )
      .min(1)
      .max(64),
    reason: z.string().min(1).max(2048),
    dryRun: z.boolean(),
  })
  .strict();
export type QuotaRewrittenDetail = z.infer<typeof QuotaRewrittenDetailSchema>;
