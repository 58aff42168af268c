/** What a scenario expects of the final cluster state (scenario.ts `expect`), checked by report.ts. */
import * as z from 'zod';
import { Name, Quantity } from './scenario-fields.ts';
import { isQuantity } from './kube/quantity.ts';

interface Bounds {
  atLeast?: number;
  atMost?: number;
}

/** A count with a lower bound, an upper bound or both (one must be set). */
const bounded = <T extends z.ZodRawShape>(shape: T) =>
  z
    .object({
      ...shape,
      atLeast: z.number().int().nonnegative().optional(),
      atMost: z.number().int().nonnegative().optional(),
    })
    .strict()
    .refine((p) => (p as Bounds).atLeast !== undefined || (p as Bounds).atMost !== undefined, {
      message: 'set atLeast, atMost or both',
    });

/** Checks on the final cluster state, printed as pass/fail in the summary. */
export const ExpectSchema = z.union([
  z
    .object({
      node: Name,
      /** The node is gone (replaced, given back). */
      absent: z.literal(true).optional(),
      cordoned: z.boolean().optional(),
      tainted: z.string().optional(),
      /** The node does not carry this taint key (a per-GPU fence that held, issue #32). */
      notTainted: z.string().optional(),
      label: z.record(z.string(), z.string()).optional(),
      /** Allocatable quantities as the kubelet reports them (a fenced GPU leaves nvidia.com/gpu). */
      allocatable: z
        .record(
          z.string(),
          Quantity.refine((v) => typeof v === 'number' || isQuantity(v), 'not a Kubernetes quantity (2, 500m, 16Gi)'),
        )
        .optional(),
    })
    .strict(),
  z
    .object({
      pendingPods: bounded({
        resource: z.string().min(1),
      }),
    })
    .strict(),
  /** Ready nodes carrying every label of `selector` (a node pool that grew or shrank). */
  z
    .object({
      nodes: bounded({
        selector: z.record(z.string(), z.string()),
      }),
    })
    .strict(),
  z
    .object({
      event: z.string().min(1),
      node: Name.optional(),
      /** Default: at least 1 (at least 0 when only `atMost` is set). */
      atLeast: z.number().int().nonnegative().optional(),
      atMost: z.number().int().nonnegative().optional(),
      /** Only events whose detail (as JSON) contains this text: the words a Remediation says, an action. */
      says: z.string().min(1).optional(),
    })
    .strict(),
  /** Remediation events about a node, of an action, decided by a policy profile ('' = by none). */
  z
    .object({
      remediation: z
        .object({
          node: Name,
          action: z.string().min(1).optional(),
          profile: z.string().optional(),
          atLeast: z.number().int().nonnegative().optional(),
          atMost: z.number().int().nonnegative().optional(),
        })
        .strict()
        .transform((r) => (r.atLeast === undefined && r.atMost === undefined ? { ...r, atLeast: 1 } : r)),
    })
    .strict(),
  /** Pods still running (bound, phase Running, not terminating) carrying every label of `selector`. */
  z
    .object({
      runningPods: bounded({
        selector: z.record(z.string(), z.string()),
      }),
    })
    .strict(),
  /** Pods of a namespace still bound and not terminating (a tenant never moved: issue #32), on `node` if given. */
  z
    .object({
      running: bounded({
        namespace: Name,
        node: Name.optional(),
      }),
    })
    .strict(),
]);
export type Expectation = z.infer<typeof ExpectSchema>;
