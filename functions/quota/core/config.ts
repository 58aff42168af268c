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
 *     - { name: ml, namespaces: [ml-train, ml-infer], weight: 4, guarantee: { nvidia.com/gpu: 16 },
 *         max: { nvidia.com/gpu: 32 } }
 *
 * Lending and its limits (docs/quota.md, "Never stranded"):
 *
 *   headroom: { nvidia.com/gpu: 2 }          # kept free above a lender's usage (a team may say its own)
 *   maxDecreasePerRound: { nvidia.com/gpu: 4 } # a team's quota falls at most this much per round
 *
 * MIG profiles from GPU-equivalents (opt-in, per group of profiles): a team states its share of
 * the group in GPUs under the group's name, and gpu-reflex derives its per-profile quotas:
 *
 *   migGroups: [{ name: gpu-reflex.io/mig-gpus, profiles: [nvidia.com/mig-1g.10gb, nvidia.com/mig-3g.40gb] }]
 *   teams: [{ name: research, namespaces: [research], guarantee: { gpu-reflex.io/mig-gpus: 2 } }]
 */
import * as z from 'zod';
import { parseConfigText } from '../../lib/yaml-text.ts';

const EXTENDED = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?\/[-a-zA-Z0-9._]+$/;

/** Why `k` cannot be a resource to share out, or undefined when it can. */
function badResource(k: string): string | undefined {
  if (k.startsWith('limits.'))
    return (
      `"${k}": quota on limits of an extended resource is accepted by the API server and never enforced; name ` +
      `the resource (${k.slice(7)}) and gpu-reflex writes requests.${k.slice(7)}`
    );
  if (k.startsWith('requests.'))
    return `"${k}": name the resource itself (${k.slice(9)}); gpu-reflex writes the requests. key`;
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
    /** Per resource: quota kept free above its usage when its idle share is lent (default: the top-level one). */
    headroom: Amounts.default({}),
  })
  .strict()
  .superRefine((t, ctx) => {
    for (const [r, g] of Object.entries(t.guarantee)) {
      const m = t.max[r];
      if (m !== undefined && g > m)
        ctx.addIssue({ code: 'custom', path: ['guarantee', r], message: `guarantee ${g} is above max ${m}` });
    }
  });

const MigGroup = z
  .object({
    /** The name teams state their share under, in GPUs; never written as a quota key. */
    name: ResourceName,
    /** The MIG profile resources (`nvidia.com/mig-<profile>`) whose quotas derive from the share. */
    profiles: z
      .array(
        ResourceName.refine(
          (k) => k.startsWith('nvidia.com/mig-'),
          'not a MIG profile resource (nvidia.com/mig-<profile>)',
        ),
      )
      .min(1),
  })
  .strict();

export const QuotaConfigSchema = z
  .object({
    /** The ResourceQuota and LimitRange gpu-reflex owns in each namespace. */
    quotaName: Name.default('gpu-reflex'),
    /** The resources shared out; default: those any team names, else nvidia.com/gpu. */
    resources: z.array(ResourceName).optional(),
    overcommit: z.number().min(1).max(2).default(1),
    buffer: Amounts.default({}),
    /**
     * Per resource: what lending never takes from a team — quota above its usage, so its next pods
     * are admitted at once while its idle share is lent (a team's own `headroom` wins; default 1).
     */
    headroom: Amounts.default({}),
    /** Per resource: the most one team's quota may fall in one round (unset: no limit). */
    maxDecreasePerRound: z.record(z.string(), z.number().int().positive()).default({}),
    limitRange: z.object({ default: Amounts.optional(), max: Amounts.optional() }).strict().optional(),
    /** Opt-in: MIG profile quotas derived from GPU-equivalent shares (docs/quota.md). */
    migGroups: z.array(MigGroup).default([]),
    teams: z.array(Team).min(1),
  })
  .strict()
  .superRefine((c, ctx) => {
    const groupOf = new Map<string, string>();
    c.migGroups.forEach((g, i) => {
      if (g.name.startsWith('nvidia.com/mig-'))
        ctx.addIssue({
          code: 'custom',
          path: ['migGroups', i, 'name'],
          message: `${g.name} is a MIG profile resource: name the group something else (gpu-reflex.io/mig-gpus)`,
        });
      if (c.migGroups.findIndex((x) => x.name === g.name) !== i)
        ctx.addIssue({ code: 'custom', path: ['migGroups', i, 'name'], message: `group ${g.name} is named twice` });
      g.profiles.forEach((p, j) => {
        const other = groupOf.get(p);
        if (other !== undefined)
          ctx.addIssue({
            code: 'custom',
            path: ['migGroups', i, 'profiles', j],
            message: `${p} already belongs to group ${other}`,
          });
        groupOf.set(p, g.name);
      });
    });
    c.teams.forEach((t, i) => {
      for (const field of ['guarantee', 'max', 'headroom'] as const) {
        for (const r of Object.keys(t[field])) {
          const g = groupOf.get(r);
          if (g !== undefined)
            ctx.addIssue({
              code: 'custom',
              path: ['teams', i, field, r],
              message: `${r} is derived from group ${g}: state the team's share in GPUs under ${g}`,
            });
        }
      }
    });
    for (const field of ['headroom', 'maxDecreasePerRound'] as const)
      for (const r of Object.keys(c[field])) {
        const why = badResource(r) ?? (groupOf.has(r) ? `${r} is derived from group ${groupOf.get(r)}` : undefined);
        if (why) ctx.addIssue({ code: 'custom', path: [field, r], message: why });
      }
    (c.resources ?? []).forEach((r, i) => {
      if (groupOf.has(r) || c.migGroups.some((g) => g.name === r))
        ctx.addIssue({
          code: 'custom',
          path: ['resources', i],
          message: `${r} belongs to a MIG group (migGroups): its profiles are shared out through it`,
        });
    });
    const seen = new Map<string, string>();
    c.teams.forEach((t, i) => {
      if (c.teams.findIndex((x) => x.name === t.name) !== i)
        ctx.addIssue({ code: 'custom', path: ['teams', i, 'name'], message: `team ${t.name} is named twice` });
      t.namespaces.forEach((ns, j) => {
        const other = seen.get(ns);
        if (other)
          ctx.addIssue({
            code: 'custom',
            path: ['teams', i, 'namespaces', j],
            message: `namespace ${ns} already belongs to team ${other}`,
          });
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

/**
 * The resources gpu-reflex writes quota keys for: the configured list, else every resource a team
 * names, else nvidia.com/gpu (less MIG group names); then every MIG group's profiles.
 */
export function resourcesOf(c: QuotaConfig): string[] {
  const groups = new Set(c.migGroups.map((g) => g.name));
  const named = c.resources
    ? [...c.resources]
    : [...new Set(c.teams.flatMap((t) => [...Object.keys(t.guarantee), ...Object.keys(t.max)]))]
        .filter((r) => !groups.has(r))
        .sort();
  const own = named.length > 0 || groups.size > 0 ? named : ['nvidia.com/gpu'];
  return [...own, ...c.migGroups.flatMap((g) => g.profiles)];
}
