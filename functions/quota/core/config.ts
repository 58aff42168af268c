/**
 * The quota rewriter's configuration: teams (one or more namespaces each), their weight,
 * guaranteed minimum and maximum per resource, the buffer kept back, the overcommit cap, and the
 * LimitRange defaults written beside each quota. YAML or JSON (QUOTA_CONFIG_FILE), validated with
 * zod so a mistake names its field.
 *
 * Resources are extended resources (`nvidia.com/gpu`, `aliyun.com/gpu-mem`, `amd.com/gpu`…);
 * quotas are written as `requests.<resource>` keys only: the API server enforces extended-resource
 * quota on requests, and accepts `limits.<extended>` without ever enforcing it, so a
 * `limits.`-prefixed key in the configuration is refused with the reason.
 *
 *   overcommit: 1.1                # total of all hard values ≤ capacity × this
 *   buffer: { nvidia.com/gpu: 8 }  # kept back from what is shared out
 *   limitRange: { default: { nvidia.com/gpu: 1 }, max: { nvidia.com/gpu: 8 } }
 *   teams:
 *     - { name: ml, namespaces: [ml-train, ml-infer], weight: 4, guarantee: { nvidia.com/gpu: 16 }, max: { nvidia.com/gpu: 32 } }
 */
import { z } from 'zod';
import { parseConfigText } from '../../lib/yaml-text.ts';

const EXTENDED = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?\/[-a-zA-Z0-9._]+$/;

/** Why `k` cannot be a resource to share out, or undefined when it can. */
function badResource(k: string): string | undefined {
  if (k.startsWith('limits.')) return `"${k}": quota on limits of an extended resource is accepted by the API server and never enforced; name the resource (${k.slice(7)}) and gpu-reflex writes requests.${k.slice(7)}`;
  if (k.startsWith('requests.')) return `"${k}": name the resource itself (${k.slice(9)}); gpu-reflex writes the requests. key`;
  if (!EXTENDED.test(k)) return `"${k}" is not an extended resource name such as nvidia.com/gpu or aliyun.com/gpu-mem`;
  return undefined;
}
const ResourceName = z.string().superRefine((k, ctx) => {
  const why = badResource(k);
  if (why) ctx.addIssue({ code: 'custom', message: why });
});
// Keys are checked here rather than by the record's key schema, so the issue keeps its words.
const Amounts = z.record(z.string(), z.number().int().nonnegative()).superRefine((m, ctx) => {
  for (const k of Object.keys(m)) {
    const why = badResource(k);
    if (why) ctx.addIssue({ code: 'custom', path: [k], message: why });
  }
});
const Name = z.string().regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'must be a lowercase RFC 1123 label');

const Team = z
  .object({
    name: Name,
    namespaces: z.array(Name).min(1),
    weight: z.number().positive().default(1),
    guarantee: Amounts.default({}),
    max: Amounts.default({}),
  })
  .strict()
  .superRefine((t, ctx) => {
    for (const [r, g] of Object.entries(t.guarantee)) {
      const m = t.max[r];
      if (m !== undefined && g > m) ctx.addIssue({ code: 'custom', path: ['guarantee', r], message: `guarantee ${g} is above max ${m}` });
    }
  });

export const QuotaConfigSchema = z
  .object({
    /** The ResourceQuota and LimitRange gpu-reflex owns in each namespace. */
    quotaName: Name.default('gpu-reflex'),
    /** The resources shared out; default: those any team names, else nvidia.com/gpu. */
    resources: z.array(ResourceName).optional(),
    overcommit: z.number().min(1).max(2).default(1),
    buffer: Amounts.default({}),
    limitRange: z.object({ default: Amounts.optional(), max: Amounts.optional() }).strict().optional(),
    teams: z.array(Team).min(1),
  })
  .strict()
  .superRefine((c, ctx) => {
    const seen = new Map<string, string>();
    c.teams.forEach((t, i) => {
      if (c.teams.findIndex((x) => x.name === t.name) !== i) ctx.addIssue({ code: 'custom', path: ['teams', i, 'name'], message: `team ${t.name} is named twice` });
      t.namespaces.forEach((ns, j) => {
        const other = seen.get(ns);
        if (other) ctx.addIssue({ code: 'custom', path: ['teams', i, 'namespaces', j], message: `namespace ${ns} already belongs to team ${other}` });
        seen.set(ns, t.name);
      });
    });
  });

export type QuotaConfig = z.output<typeof QuotaConfigSchema>;
export type QuotaTeam = QuotaConfig['teams'][number];

export class QuotaConfigError extends Error {
  override name = 'QuotaConfigError';
}

export function parseQuotaConfig(text: string, source = 'quota config'): QuotaConfig {
  return parseConfigText(text, source, QuotaConfigSchema, (m) => new QuotaConfigError(m));
}

/** The resources shared out: the configured list, else every resource a team names, else nvidia.com/gpu. */
export function resourcesOf(c: QuotaConfig): string[] {
  if (c.resources) return [...c.resources];
  const named = new Set(c.teams.flatMap((t) => [...Object.keys(t.guarantee), ...Object.keys(t.max)]));
  return named.size > 0 ? [...named].sort() : ['nvidia.com/gpu'];
}
