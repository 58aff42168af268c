/**
 * The node labeler's configuration (LABELER_CONFIG_FILE, YAML or JSON; every field optional):
 * which label keys it writes, how a GPU model becomes the `accelerator` value, and where GPU
 * Feature Discovery's labels live. Validated with zod, so a mistake names its field.
 *
 *   prefix: gpu-reflex.io/            # default keys: <prefix>gpu.count, <prefix>mig.enabled, …
 *   keys:                             # a key, or false to leave that fact unlabelled
 *     accelerator: accelerator        # the field notes' key (kubectl label node … accelerator=nvidia-a100)
 *     gpuCount: gpu-count             # the field notes' second key, where selectors use it
 *   models:                           # first match (case-insensitive substring of the NVML name) wins
 *     - { match: V100, value: nvidia-tesla-v100 }
 *
 * Keys are whole label keys, so selectors a fleet already uses keep working. A key under GFD's
 * prefix (`nvidia.com/`) is allowed: it is written only on nodes where GFD does not run.
 */
import * as z from 'zod';
import { parseConfigText } from '../../lib/yaml-text.ts';

/** `[prefix/]name` as the API server accepts a label key. */
const LABEL_NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
/** A label value: at most 63 characters, alphanumeric at both ends. */
export const LABEL_VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/;

/** Why `key` cannot be a label key, or undefined when it can. */
export function badLabelKey(key: string): string | undefined {
  const slash = key.lastIndexOf('/');
  const prefix = slash < 0 ? undefined : key.slice(0, slash);
  const name = slash < 0 ? key : key.slice(slash + 1);
  if (prefix !== undefined && (prefix.length > 253 || !DNS_SUBDOMAIN.test(prefix)))
    return `"${key}": the prefix "${prefix}" is not a DNS subdomain`;
  if (!LABEL_NAME.test(name))
    return `"${key}": the name "${name}" must be 1-63 characters, alphanumeric at both ends, with - _ . inside`;
  return undefined;
}

const LabelKey = z.string().superRefine((k, ctx) => {
  const why = badLabelKey(k);
  if (why) ctx.addIssue({ code: 'custom', message: why });
});
/** A prefix: a DNS subdomain and a slash (`gpu-reflex.io/`), or '' for unprefixed keys. */
const Prefix = z
  .string()
  .refine(
    (p) => p === '' || (p.endsWith('/') && DNS_SUBDOMAIN.test(p.slice(0, -1)) && p.length <= 254),
    'must be a DNS subdomain followed by "/" (gpu-reflex.io/), or ""',
  );

/** The facts the labeler can write, and the name each gets under the prefix by default. */
export const FACTS = {
  accelerator: undefined, // the field notes' key, unprefixed: `accelerator`
  gpuCount: 'gpu.count',
  migCapable: 'mig.capable',
  migEnabled: 'mig.enabled',
  migStrategy: 'mig.strategy',
  driverVersion: 'driver.version',
  cudaVersion: 'cuda.version',
} as const;
export type Fact = keyof typeof FACTS;
export const FACT_NAMES = Object.keys(FACTS) as Fact[];

const Keys = z
  .object(
    Object.fromEntries(FACT_NAMES.map((f) => [f, z.union([LabelKey, z.literal(false)]).optional()])) as Record<
      Fact,
      z.ZodOptional<z.ZodUnion<[typeof LabelKey, z.ZodLiteral<false>]>>
    >,
  )
  .strict();

const Model = z
  .object({
    /** A case-insensitive substring of the NVML name (`V100`, `A100-SXM4-40GB`). */
    match: z.string().min(1).max(96),
    value: z
      .string()
      .min(1)
      .regex(LABEL_VALUE, 'must be a label value: at most 63 characters, alphanumeric at both ends'),
  })
  .strict();

export const LabelerConfigSchema = z
  .object({
    prefix: Prefix.default('gpu-reflex.io/'),
    keys: Keys.default({}),
    models: z.array(Model).max(100).default([]),
    gfd: z
      .object({
        /** Where GFD writes (gpu.*, mig.*, cuda.*, gfd.timestamp): gpu-reflex never writes here where GFD runs. */
        prefix: Prefix.default('nvidia.com/'),
        /** A label starting with this, not gpu-reflex's own, says GFD runs on the node. */
        detect: z.string().min(1).default('nvidia.com/gpu.'),
      })
      .strict()
      .default({ prefix: 'nvidia.com/', detect: 'nvidia.com/gpu.' }),
  })
  .strict()
  .superRefine((c, ctx) => {
    const seen = new Map<string, Fact>();
    for (const f of FACT_NAMES) {
      const k = keyOf(c, f);
      if (k === undefined) continue;
      const other = seen.get(k);
      // A key named twice would be two facts fighting over one label.
      if (other) ctx.addIssue({ code: 'custom', path: ['keys', f], message: `"${k}" is already the key of ${other}` });
      seen.set(k, f);
    }
  });

export type LabelerConfig = z.output<typeof LabelerConfigSchema>;

/** The label key of a fact, or undefined when the configuration turned it off. */
export function keyOf(c: Pick<LabelerConfig, 'prefix' | 'keys'>, f: Fact): string | undefined {
  const k = c.keys[f];
  if (k === false) return undefined;
  return k ?? (f === 'accelerator' ? 'accelerator' : `${c.prefix}${FACTS[f]}`);
}

export class LabelerConfigError extends Error {
  override name = 'LabelerConfigError';
}

export function parseLabelerConfig(text: string, source = 'labeler config'): LabelerConfig {
  return parseConfigText(text, source, LabelerConfigSchema, (m) => new LabelerConfigError(m));
}

export const DEFAULT_LABELER_CONFIG: LabelerConfig = LabelerConfigSchema.parse({});
