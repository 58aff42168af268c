/**
 * Loading a policy file (YAML, or JSON — JSON is YAML 1.2) over DEFAULT_POLICY. Errors name the
 * file, line and field: `policy.yaml:12: xids.79.action: expected one of ...`. Nothing half-loads:
 * either the whole file is valid and merged, or loadPolicy throws PolicyFileError.
 */
import { isMap, isPair, isScalar, isSeq, LineCounter, parseDocument, type Document } from 'yaml';
import * as z from 'zod';
import {
  ApprovalsSchema,
  FenceSchema,
  RepairSchema,
  DEFAULT_POLICY,
  PolicySchema,
  RuleOverrideSchema,
  PoolOverrideSchema,
  ProfileName,
  ProfileSchema,
  EscalateSchema,
  type Policy,
} from './policy.ts';
import { GPU_RECOVERY_ACTIONS, HEALTH_CONDITIONS, int } from '../../../events/index.ts';
import { checkAliasCount, yamlValue, YamlTextError } from '../../lib/yaml-text.ts';

export class PolicyFileError extends Error {
  constructor(
    readonly problems: string[],
    options?: { cause?: unknown },
  ) {
    super(problems.join('\n'), options);
    this.name = 'PolicyFileError';
  }
}

/** What a file may say: every section and every field optional. */
const PolicyFileSchema = z
  .object({
    xids: z.record(z.string().regex(/^\d+$/, 'expected an XID number'), RuleOverrideSchema).optional(),
    conditions: z.partialRecord(z.enum(HEALTH_CONDITIONS), RuleOverrideSchema).optional(),
    recoveryActions: z.partialRecord(z.enum(GPU_RECOVERY_ACTIONS), RuleOverrideSchema).optional(),
    pools: z.record(z.string().min(1), PoolOverrideSchema).optional(),
    profiles: z.record(ProfileName, ProfileSchema).optional(),
    poolLabels: z.array(z.string().min(1)).min(1).max(8).optional(),
    blastRadius: z
      .object({
        maxShare: z.number().min(0).max(1).optional(),
        maxCount: int().min(0).optional(),
        windowMinutes: int().min(1).optional(),
      })
      .strict()
      .optional(),
    escalation: EscalateSchema.partial()
      .extend({ recurrenceHours: int().min(0).max(720).optional() })
      .strict()
      .optional(),
    quietPeriodMinutes: int().min(0).max(10_080).optional(),
    approvals: ApprovalsSchema.partial().optional(),
    repair: RepairSchema.partial().optional(),
    fence: FenceSchema.extend({ dra: FenceSchema.shape.dra.partial() }).partial().optional(),
    drainTimeoutMinutes: int().min(1).max(10_080).optional(),
    taintKey: z.string().optional(),
    /** Not a rule: selects the dry-run wiring (functions/lib/wiring.ts), like DRY_RUN=true. */
    dryRun: z.boolean().optional(),
  })
  .strict();
type PolicyFile = z.infer<typeof PolicyFileSchema>;

/** Parses `text` (named `fileName` in errors) and merges it over DEFAULT_POLICY. */
export function loadPolicy(text: string, fileName: string): Policy {
  return loadPolicyFile(text, fileName).policy;
}

/**
 * The policy and the file's `dryRun`, which is no part of the policy: the core never sees it;
 * the wiring uses it to choose the dry-run ports.
 */
export function loadPolicyFile(text: string, fileName: string): { policy: Policy; dryRun: boolean } {
  const lines = new LineCounter();
  // Aliases are bounded: an alias bomb is refused in one line, not with a stack trace or a hang.
  inFile(fileName, () => checkAliasCount(text));
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
  if (doc.errors.length > 0) {
    throw new PolicyFileError(
      doc.errors.map((e) => `${fileName}:${lines.linePos(e.pos[0]).line}: ${e.message.split('\n')[0]}`),
    );
  }
  const raw: unknown = inFile(fileName, () => yamlValue(doc)) ?? {};
  const parsed = PolicyFileSchema.safeParse(raw);
  if (!parsed.success) throw new PolicyFileError(parsed.error.issues.map((i) => located(doc, lines, fileName, i)));
  const merged = PolicySchema.safeParse(mergePolicy(DEFAULT_POLICY, parsed.data));
  if (!merged.success) throw new PolicyFileError(merged.error.issues.map((i) => located(doc, lines, fileName, i)));
  return { policy: merged.data, dryRun: parsed.data.dryRun ?? false };
}

/** Runs `read`, turning a YamlTextError into a PolicyFileError naming the file. */
function inFile<T>(fileName: string, read: () => T): T {
  try {
    return read();
  } catch (err) {
    if (!(err instanceof YamlTextError)) throw err;
    throw new PolicyFileError([`${fileName}: ${err.message}`], { cause: err });
  }
}

/** Field-by-field merge: a rule in the file changes only the fields it names. */
export function mergePolicy(base: Policy, file: PolicyFile): Policy {
  const rules = <K extends string>(a: Partial<Record<K, object>>, b: Partial<Record<K, object>> | undefined) => {
    const out: Record<string, object> = { ...(a as Record<string, object>) };
    for (const [k, v] of Object.entries(b ?? {})) out[k] = { ...(out[k] ?? {}), ...(v as object) };
    return out;
  };
  return {
    xids: rules(base.xids, file.xids),
    conditions: rules(base.conditions, file.conditions),
    recoveryActions: rules(base.recoveryActions, file.recoveryActions),
    pools: { ...base.pools, ...(file.pools ?? {}) },
    profiles: { ...base.profiles, ...(file.profiles ?? {}) },
    poolLabels: file.poolLabels ?? [...base.poolLabels],
    blastRadius: { ...base.blastRadius, ...(file.blastRadius ?? {}) },
    escalation: { ...base.escalation, ...(file.escalation ?? {}) },
    quietPeriodMinutes: file.quietPeriodMinutes ?? base.quietPeriodMinutes,
    drainTimeoutMinutes: file.drainTimeoutMinutes ?? base.drainTimeoutMinutes,
    taintKey: file.taintKey ?? base.taintKey,
    approvals: { ...base.approvals, ...(file.approvals ?? {}) },
    repair: { ...base.repair, ...(file.repair ?? {}) },
    fence: { ...base.fence, ...(file.fence ?? {}), dra: { ...base.fence.dra, ...(file.fence?.dra ?? {}) } },
  } as Policy;
}

function located(doc: Document, lines: LineCounter, fileName: string, issue: z.core.$ZodIssue): string {
  const path = issue.path.map(String);
  // Unknown keys: point at the first unknown key itself.
  const keys = issue.code === 'unrecognized_keys' ? issue.keys : [];
  const at = [...path, ...(keys[0] !== undefined ? [keys[0]] : [])];
  const offset = offsetOf(doc, at);
  const line = offset === undefined ? 1 : lines.linePos(offset).line;
  const field = (keys.length > 0 ? [...path, keys.join(', ')] : path).join('.') || '(top level)';
  return `${fileName}:${line}: ${field}: ${issue.message.replace(/^Invalid option: /, '')}`;
}

/** Source offset of the deepest node on `path` that exists (keys may be numbers in YAML: `79:`). */
function offsetOf(doc: Document, path: string[]): number | undefined {
  let node: unknown = doc.contents;
  let offset: number | undefined = (doc.contents as { range?: [number] } | null)?.range?.[0];
  for (const seg of path) {
    if (isMap(node)) {
      const pair = node.items.find((p) => isPair(p) && isScalar(p.key) && String(p.key.value) === seg);
      if (!pair) break;
      offset = (isScalar(pair.key) ? pair.key.range?.[0] : undefined) ?? offset;
      node = pair.value;
      if (isScalar(node) && node.range) offset = node.range[0];
    } else if (isSeq(node)) {
      const item = node.items[Number(seg)];
      if (item === undefined) break;
      node = item;
      const r = (item as { range?: [number] }).range;
      if (r) offset = r[0];
    } else break;
  }
  return offset;
}
