import { readFileSync } from 'node:fs';
import * as z from 'zod';
import { parseYamlText } from '../../../functions/lib/yaml-text.ts';

/**
 * The fleet file: what a simulated cluster starts with. YAML or JSON, validated with zod so a
 * mistake names its field (`nodes.2.allocatable.cpu: ...`). Groups with `count` expand to
 * `<name>-0 … <name>-(count-1)`, which keeps a 1,500-node fleet a few lines long.
 * fleet-seed.ts creates its objects through the same admission path as API clients.
 */
const Quantity = z.union([
  z
    .string()
    .regex(
      /^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+|Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$/,
      'must be a Kubernetes quantity such as 500m, 16Gi or 8',
    ),
  z.number(),
]);
const Resources = z.record(z.string(), Quantity);
const Labels = z.record(z.string(), z.string());
export const Name = z.string().regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, 'must be a lowercase RFC 1123 name');
/** One `spec.resourceClaims` entry: a claim made from a template, or an existing claim by name (exactly one). */
export const PodClaim = z.union([
  z.object({ name: Name, resourceClaimTemplateName: Name }).strict(),
  z.object({ name: Name, resourceClaimName: Name }).strict(),
]);
const Taint = z
  .object({
    key: z.string(),
    value: z.string().optional(),
    effect: z.enum(['NoSchedule', 'PreferNoSchedule', 'NoExecute']),
  })
  .strict();
const Toleration = z
  .object({
    key: z.string().optional(),
    operator: z.enum(['Exists', 'Equal']).optional(),
    value: z.string().optional(),
    effect: z.string().optional(),
    tolerationSeconds: z.number().optional(),
  })
  .strict();

const NodeGroup = z
  .object({
    name: Name,
    count: z.number().int().positive().optional(),
    labels: Labels.optional(),
    annotations: Labels.optional(),
    allocatable: Resources,
    capacity: Resources.optional(),
    taints: z.array(Taint).optional(),
    unschedulable: z.boolean().optional(),
    ready: z.boolean().optional(),
    /**
     * The node's GPUs are published by a DRA driver of this name (NVIDIA's: `gpu.nvidia.com`), not by a
     * device plugin: a ResourceSlice lists them (dra-slice.ts; the count from `nvidia.com/gpu.count`) and
     * the node advertises no `nvidia.com/gpu`. Pods get them through ResourceClaims.
     */
    draDriver: z.string().min(1).optional(),
  })
  .strict()
  .refine(
    (g) =>
      !g.draDriver || (g.allocatable['nvidia.com/gpu'] === undefined && g.capacity?.['nvidia.com/gpu'] === undefined),
    {
      message:
        'a DRA node advertises no nvidia.com/gpu: its GPUs are devices in its ResourceSlice (set nvidia.com/gpu.count)',
    },
  );

const Namespace = z
  .object({
    name: Name,
    labels: Labels.optional(),
    quotas: z.array(z.object({ name: Name, hard: Resources }).strict()).optional(),
    limitRanges: z
      .array(
        z
          .object({
            name: Name,
            limits: z.array(
              z
                .object({
                  type: z.enum(['Container', 'Pod']),
                  default: Resources.optional(),
                  defaultRequest: Resources.optional(),
                  max: Resources.optional(),
                  min: Resources.optional(),
                })
                .strict(),
            ),
          })
          .strict(),
      )
      .optional(),
  })
  .strict();

const Selector = z.object({ matchLabels: Labels.optional() }).strict();
const Pdb = z
  .object({
    name: Name,
    namespace: Name,
    minAvailable: z.union([z.number().int(), z.string()]).optional(),
    maxUnavailable: z.union([z.number().int(), z.string()]).optional(),
    selector: Selector,
  })
  .strict()
  .refine((p) => (p.minAvailable === undefined) !== (p.maxUnavailable === undefined), {
    message: 'set exactly one of minAvailable and maxUnavailable',
  });

const Workload = {
  labels: Labels.optional(),
  image: z.string().optional(),
  requests: Resources.optional(),
  limits: Resources.optional(),
  tolerations: z.array(Toleration).optional(),
  nodeSelector: Labels.optional(),
  terminationGracePeriodSeconds: z.number().int().nonnegative().optional(),
};

const DaemonSet = z.object({ name: Name, namespace: Name, ...Workload }).strict();
const PodGroup = z
  .object({
    name: Name,
    namespace: Name,
    count: z.number().int().positive().optional(),
    node: z.string().optional(),
    owner: z
      .object({ kind: z.enum(['ReplicaSet', 'Job', 'StatefulSet']), name: Name })
      .strict()
      .optional(),
    emptyDir: z.boolean().optional(),
    /** The pods exit 0 (Succeeded) this long after starting: Jobs that finish and free their GPUs. */
    completeAfterSeconds: z.number().nonnegative().optional(),
    /** The pods start Ready=False and turn Ready this long after starting (readiness.ts), replacements too. */
    readyAfterSeconds: z.number().nonnegative().optional(),
    /** `spec.priority` and `spec.priorityClassName`; a named class is created with this value (PriorityClass). */
    priority: z.number().int().optional(),
    priorityClassName: Name.optional(),
    /**
     * DRA: `spec.resourceClaims`, used by the container (`resources.claims`): each entry a claim made
     * from a template, or an existing claim by `resourceClaimName` that every pod naming it shares
     * (exactly one of the two: PodResourceClaim, kubernetes.io DRA docs). The simulated driver gives
     * each claim one whole GPU.
     */
    resourceClaims: z.array(PodClaim).max(4).optional(),
    /** The pods hold their GPUs but run no GPU process (readiness.ts NO_GPU_PROCESS): NVML lists none for them. */
    gpuProcess: z.boolean().optional(),
    ...Workload,
  })
  .strict();

export const FleetSchema = z
  .object({
    nodes: z.array(NodeGroup).default([]),
    namespaces: z.array(Namespace).default([]),
    podDisruptionBudgets: z.array(Pdb).default([]),
    daemonSets: z.array(DaemonSet).default([]),
    pods: z.array(PodGroup).default([]),
    /** Layouts the simulated mig-manager applies when a node's `nvidia.com/mig.config` label names one. */
    migConfigs: z.record(z.string(), Resources).default({}),
    migReconfigureSeconds: z.number().nonnegative().default(30),
    /**
     * Seconds after mig-manager's `success` until the Node's `nvidia.com/mig-*` allocatable shows the new
     * layout (0 meanwhile: the device plugin restarts, the kubelet reports it later). Default 0: at once.
     */
    migAllocatableLagSeconds: z.number().nonnegative().default(0),
    /**
     * The ClusterPolicy's `spec.migManager.config.name`: the mig-parted ConfigMap mig-manager reads.
     * Default gpu-reflex's own (as its install sets it, docs/mig.md); `default-mig-parted-config` is
     * the GPU Operator's, which it rewrites on every reconcile (mig-manager.ts GPU Operator stand-in).
     */
    migManagerConfig: z.string().min(1).default('gpu-reflex-mig-parted-config'),
    /** Escape hatch: raw manifests of any served kind, created after everything else. */
    objects: z
      .array(
        z
          .object({
            apiVersion: z.string(),
            kind: z.string(),
            metadata: z.object({ name: z.string(), namespace: z.string().optional() }).loose(),
          })
          .loose(),
      )
      .default([]),
  })
  .strict();

export type Fleet = z.input<typeof FleetSchema>;
export type ParsedFleet = z.output<typeof FleetSchema>;

export class FleetError extends Error {
  override name = 'FleetError';
}

/** Parses fleet text (YAML or JSON); errors list every bad field by path. */
export function parseFleet(text: string, source = 'fleet'): ParsedFleet {
  let raw: unknown;
  try {
    raw = parseYamlText(text);
  } catch (err) {
    throw new FleetError(`${source}: not YAML or JSON: ${(err as Error).message}`);
  }
  return validateFleet(raw ?? {}, source);
}

export function validateFleet(raw: unknown, source = 'fleet'): ParsedFleet {
  const r = FleetSchema.safeParse(raw);
  if (!r.success) {
    const lines = r.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`);
    throw new FleetError(`${source} is invalid:\n  ${lines.join('\n  ')}`);
  }
  return r.data;
}

export function loadFleet(path: string): ParsedFleet {
  return parseFleet(readFileSync(path, 'utf8'), path);
}

export const EXAMPLE_FLEET_PATH = new URL('./fleets/example.yaml', import.meta.url).pathname;
