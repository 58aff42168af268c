/** `Quota Rewritten` — a team's ResourceQuota changed (example: ./quota-rewritten.example.json). */
import * as z from 'zod';
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
    /**
     * Additive (2026-12, issue #30): the capacity the planner shared out at this rewrite, and what it
     * left out and why — a node not Ready, cordoned, draining or awaiting repair, or `gpus` whole GPUs
     * fenced by remediation on a node that stays. Absent from rollbacks and older producers.
     */
    capacity: z
      .object({
        resources: z
          .array(
            z
              .object({
                resource: z.string().min(1).max(253),
                capacity: z.number().int().nonnegative(),
                shared: z.number().int().nonnegative(),
              })
              .strict(),
          )
          .max(64),
        out: z
          .array(
            z
              .object({
                node: z.string().min(1).max(253),
                why: z.string().min(1).max(256),
                gpus: z.number().int().positive().optional(),
                /** MIG instances fenced on a node that stays, per resource (`nvidia.com/mig-1g.10gb`: 1). */
                instances: z.record(z.string().min(1).max(253), z.number().int().positive()).optional(),
              })
              .strict(),
          )
          .max(64),
      })
      .strict()
      .optional(),
    dryRun: z.boolean(),
  })
  .strict();
export type QuotaRewrittenDetail = z.infer<typeof QuotaRewrittenDetailSchema>;
