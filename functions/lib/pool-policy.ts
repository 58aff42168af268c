/**
 * The pools gpu-reflex manages, the kernel's (autoscale-pools sizes them, remediation replaces a
 * node within their bounds, chat's `pool scale` keeps to them): the pool autoscaler's policy, which ACK node pools
 * gpu-reflex may size, their bounds, and how
 * patient to be. YAML or JSON (AUTOSCALE_POLICY_FILE), validated with zod so a mistake names its
 * field. A node pool the policy does not name is never touched.
 *
 *   pendingSeconds: 60        # a pod counts as demand once it has waited this long
 *   cooldownMinutes: 3        # after a pool grew, wait this long before growing it again
 *   # kept back from an instance type's size when the pool has no node to read allocatable from:
 *   reserve: { cpu: 0.5, memoryGiB: 1 }
 *   scaleIn: { idleMinutes: 10, drainTimeoutMinutes: 30 }   # give back nodes that ran no GPU pod this long
 *   # a scale-out adding more than this per hour waits for "approve ID" in chat:
 *   approval: { aboveHourlyCost: 100, ttlMinutes: 30 }
 *   # ECS planned maintenance and spot interruptions: cordon and add a node prepareMinutes before the drain
 *   # deadline, empty the node drainBeforeMinutes before the event at the latest (autoscale/core/maintenance.ts):
 *   maintenance: { enabled: true, drainBeforeMinutes: 30, prepareMinutes: 60 }
 *   pools:
 *     np-t4-inference: { min: 0, max: 10, maxStep: 4 }
 *     np-a10-shared:                          # nodes run NVIDIA time-slicing: 4 pods per GPU
 *       max: 4
 *       sharing: { timeSlicing: { replicas: 4, renameByDefault: true } }
 */
import * as z from 'zod';
import { configFileFromEnv } from './wiring.ts';
import { parseConfigText } from './yaml-text.ts';

/**
 * How the pool's nodes share their GPUs when NVIDIA's device plugin does it, in its own config's
 * words (NVIDIA/k8s-device-plugin api/config/v1/replicas.go `sharing.timeSlicing`): a new node
 * offers GPUs × replicas, under `nvidia.com/gpu.shared` with `renameByDefault`. ACK's cGPU modes
 * need no policy: the pool's `ack.node.gpu.schedule` label says them.
 */
const Sharing = z
  .object({
    timeSlicing: z
      .object({
        replicas: z.number().int().min(2).max(1024),
        renameByDefault: z.boolean().default(false),
        failRequestsGreaterThanOne: z.boolean().default(false),
      })
      .strict()
      .optional(),
  })
  .strict();

const PoolBounds = z
  .object({
    min: z.number().int().nonnegative().default(0),
    max: z.number().int().positive().max(2000),
    maxStep: z.number().int().positive().max(500).default(10),
    cooldownMinutes: z.number().nonnegative().optional(),
    sharing: Sharing.optional(),
  })
  .strict()
  .refine((p) => p.min <= p.max, { message: 'min must not exceed max' });

export const AutoscalePolicySchema = z
  .object({
    pendingSeconds: z.number().int().nonnegative().max(86_400).default(60),
    cooldownMinutes: z.number().nonnegative().max(1440).default(3),
    reserve: z
      .object({ cpu: z.number().nonnegative().default(0.5), memoryGiB: z.number().nonnegative().default(1) })
      .strict()
      .default({ cpu: 0.5, memoryGiB: 1 }),
    /**
     * Giving idle nodes back: after this long with no GPU pod, drained (Eviction API) and released; a drain stuck this
     * long is abandoned.
     */
    scaleIn: z
      .object({
        idleMinutes: z.number().positive().max(10_080).default(10),
        drainTimeoutMinutes: z.number().positive().max(1440).default(30),
      })
      .strict()
      .default({ idleMinutes: 10, drainTimeoutMinutes: 30 }),
    /** Planned maintenance and spot interruptions (functions/autoscale/core/maintenance.ts). */
    maintenance: z
      .object({
        enabled: z.boolean().default(true),
        drainBeforeMinutes: z.number().nonnegative().max(1440).default(30),
        prepareMinutes: z.number().nonnegative().max(1440).default(60),
      })
      .strict()
      .default({ enabled: true, drainBeforeMinutes: 30, prepareMinutes: 60 }),
    pools: z.record(z.string().regex(/^np[a-z0-9-]*$/, 'node pool ids start with "np"'), PoolBounds).default({}),
    /**
     * Set: a scale-out that adds more than `aboveHourlyCost` (the instance type's price × nodes added, CNY) waits for a
     * person.
     */
    approval: z
      .object({ aboveHourlyCost: z.number().nonnegative(), ttlMinutes: z.number().int().min(1).max(1440).default(30) })
      .strict()
      .optional(),
  })
  .strict();

export type AutoscalePolicy = z.output<typeof AutoscalePolicySchema>;

export class AutoscalePolicyError extends Error {
  override name = 'AutoscalePolicyError';
}

export function parseAutoscalePolicy(text: string, source = 'autoscale policy'): AutoscalePolicy {
  return parseConfigText(text, source, AutoscalePolicySchema, (m) => new AutoscalePolicyError(m));
}

/** The policy AUTOSCALE_POLICY_FILE names; unset: no pool is managed. */
export function autoscalePolicyFromEnv(env: NodeJS.ProcessEnv): AutoscalePolicy {
  return (
    configFileFromEnv(env, 'AUTOSCALE_POLICY_FILE', parseAutoscalePolicy, AutoscalePolicyError) ??
    AutoscalePolicySchema.parse({})
  );
}
