import * as z from 'zod';
import { Name, PodClaim } from './kube/fleet.ts';

/** The fields scenario files share (scenario.ts): durations, names, quantities, faults and pod arrivals. */

const DURATION = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/;

/** '8s', '1.5s', '500ms', '2m', '3h' (or a number of seconds) → milliseconds. */
export function parseDuration(text: string | number): number {
  if (typeof text === 'number') return Math.round(text * 1000);
  const m = DURATION.exec(text.trim());
  if (!m) throw new Error(`"${text}" is not a duration such as 8s, 1.5s, 500ms, 2m or 3h`);
  const n = Number(m[1]);
  return Math.round(n * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[m[2] as 'ms' | 's' | 'm' | 'h']);
}

export const Duration = z.union([z.number().nonnegative(), z.string()]).transform((v, ctx) => {
  try {
    return parseDuration(v);
  } catch (err) {
    ctx.addIssue({ code: 'custom', message: (err as Error).message });
    return z.NEVER;
  }
});

export { Name };
export const Quantity = z.union([z.string().min(1), z.number()]);

/** Fault kinds the mock NVML library fires (docs/mock-nvml.md), with their fields. */
export const FaultSchema = z.discriminatedUnion('kind', [
  z
    .object({
      kind: z.literal('xid'),
      xid: z.number().int().positive(),
      gpuInstanceId: z.number().int().nonnegative().optional(),
      pid: z.number().int().positive().optional(),
      /**
       * The pod whose process hit it: the kernel line names that process's pid (default: the first process on the GPU
       * or instance).
       */
      pod: Name.optional(),
      /**
       * The driver's text after the XID number on the kernel line, as the driver writes it for this
       * XID — an NVLink5 XID's `NETIR_BER_EVENT Nonfatal XC0 i0 Link 08 (0x00000013 0x00000000 …)`.
       * Without it the line carries pid, name and the catalog's meaning.
       */
      text: z.string().min(1).max(512).optional(),
    })
    .strict(),
  z.object({ kind: z.literal('gpuLost') }).strict(),
  z
    .object({
      kind: z.literal('ecc'),
      corrected: z.number().int().nonnegative().optional(),
      uncorrected: z.number().int().nonnegative().optional(),
    })
    .strict(),
  z.object({ kind: z.literal('rowRemapPending') }).strict(),
  z.object({ kind: z.literal('rowRemapFailure') }).strict(),
  z.object({ kind: z.literal('retiredPagesPending') }).strict(),
  z.object({ kind: z.literal('recoveryAction'), action: z.number().int().min(0).max(8) }).strict(),
  z.object({ kind: z.literal('nvlinkDown'), link: z.number().int().nonnegative() }).strict(),
  // From then on the GPU does not come back from a reset (nvidia-smi --gpu-reset fails).
  z.object({ kind: z.literal('resetFails') }).strict(),
]);
export type Fault = z.infer<typeof FaultSchema>;

const Toleration = z
  .object({
    key: z.string().optional(),
    operator: z.enum(['Exists', 'Equal']).optional(),
    value: z.string().optional(),
    effect: z.string().optional(),
  })
  .strict();

/** Pods that arrive mid-scenario, created through the Kubernetes API like any client would. */
export const PodArrivalSchema = z
  .object({
    name: Name,
    namespace: Name,
    count: z.number().int().positive().max(500).default(1),
    labels: z.record(z.string(), z.string()).optional(),
    requests: z.record(z.string(), Quantity),
    limits: z.record(z.string(), Quantity).optional(),
    nodeSelector: z.record(z.string(), z.string()).optional(),
    tolerations: z.array(Toleration).optional(),
    /** The pods exit 0 (Succeeded) this long after they start running: batch work that ends. */
    completeAfterSeconds: z.number().nonnegative().optional(),
    /**
     * DRA: `spec.resourceClaims` entries, each a claim made from a ResourceClaimTemplate or a shared
     * ResourceClaim by name (exactly one of the two), used by the container (PodResourceClaim, k8s DRA docs).
     */
    resourceClaims: z.array(PodClaim).min(1).optional(),
    /** `spec.schedulingGates` names (Kueue's `kueue.x-k8s.io/admission`): not scheduled until an `ungate` step. */
    schedulingGates: z.array(z.string().min(1)).max(16).optional(),
    /**
     * A Volcano PodGroup (scheduling.volcano.sh/v1beta1) the pods form: created first, the pods ask
     * for `schedulerName: volcano` and name it in `scheduling.k8s.io/group-name` (volcano.sh/en/docs/podgroup/).
     */
    podGroup: z
      .object({
        name: Name,
        minMember: z.number().int().positive(),
        minResources: z.record(z.string(), Quantity).optional(),
      })
      .strict()
      .optional(),
    /**
     * `hostname`: required pod anti-affinity against the pods' own `app` label on
     * `kubernetes.io/hostname`, so no two of them share a node (kubernetes.io/docs/concepts/
     * scheduling-eviction/assign-pod-node/#inter-pod-affinity-and-anti-affinity).
     */
    antiAffinity: z.literal('hostname').optional(),
  })
  .strict();
export type PodArrival = z.infer<typeof PodArrivalSchema>;
