/**
 * The remediation policy: what each XID and health condition makes gpu-reflex do, how far it may
 * go in a pool, and how repeats escalate. Defaults come from the XID catalog (events/xid.ts, i.e.
 * NVIDIA's resolution buckets); a policy file overrides them (policy-file.ts). Pure data.
 */
import {
  describeXid,
  NVLINK5_XIDS,
  nvlink5Verdict,
  type GpuRecoveryAction,
  type HealthCondition,
  type RemediationAction,
} from '../../../events/index.ts';
import { chooseProfile } from './policy-profiles.ts';
import { CONDITION_DEFAULTS, RECOVERY_DEFAULTS } from './policy-defaults.ts';
import type { Escalate, Policy, RuleOverride } from './policy-schema.ts';

export * from './policy-schema.ts';
export { DEFAULT_POLICY } from './policy-defaults.ts';
export { fenceBackendOf, pdbDeadlineOf, poolOf } from './pool-policy.ts';
export { poolLimits } from './blast-radius.ts';

/** A rule after defaults, file and pool overrides are merged: what the planner obeys. */
export interface Rule {
  action: RemediationAction;
  then: RemediationAction[];
  escalate: Escalate | null;
  notify: boolean;
  /** Where the rule came from, for reasons: `XID 79`, `recovery action gpu-reset`, `pool a100`. */
  source: string;
  /** The profile that decided (policy `profiles`), when one did. */
  profile?: string;
  /**
   * quarantine-gpu: leave the GPU's running pods until this deadline (RuleOverrideSchema.letWorkFinish); null: evict
   * at once.
   */
  letWorkFinish: { deadlineMinutes: number } | null;
}

export type RuleTrigger =
  /**
   * `severity`: the kernel line's own Fatal/Nonfatal; `nvlink`: its intrinfo and errorStatus (NVLink5 XIDs 144–150).
   */
  | {
      kind: 'xid';
      xid: number;
      recoveryAction?: GpuRecoveryAction;
      severity?: 'fatal' | 'nonfatal';
      nvlink?: { intrinfo: number; errorStatus: number };
      /** The GPU's product name (profiles match `gpuModels` on it). */
      gpuModel?: string;
    }
  | {
      kind: 'condition';
      condition: HealthCondition;
      severity?: 'info' | 'warning' | 'critical';
      recoveryAction?: GpuRecoveryAction;
    };

function merge(base: RuleOverride, over: RuleOverride | undefined): RuleOverride {
  return over ? { ...base, ...Object.fromEntries(Object.entries(over).filter(([, v]) => v !== undefined)) } : base;
}

/**
 * The rule for one trigger in one pool. A recovery action NVML names wins over the XID table
 * (XID 154 always; other XIDs only when it asks for more than `none`, so a driver that reports
 * `none` beside XID 79 does not talk us out of draining a GPU that fell off the bus).
 */
export function resolveRule(
  policy: Policy,
  pool: string | undefined,
  trigger: number | HealthCondition | RuleTrigger,
): Rule {
  const t: RuleTrigger =
    typeof trigger === 'number'
      ? { kind: 'xid', xid: trigger }
      : typeof trigger === 'string'
        ? { kind: 'condition', condition: trigger }
        : trigger;
  const poolOver = pool !== undefined ? policy.pools[pool] : undefined;
  const ra = t.recoveryAction;
  const obey =
    ra !== undefined && (t.kind === 'condition' ? t.condition === 'recovery-action' : ra !== 'none' || t.xid === 154);
  if (obey || (t.kind === 'condition' && t.condition === 'recovery-action')) {
    const key = ra ?? 'none';
    return finish(merge(RECOVERY_DEFAULTS[key], policy.recoveryActions[key]), `recovery action ${key}`, undefined);
  }
  if (t.kind === 'xid') {
    const k = String(t.xid);
    const info = describeXid(t.xid);
    const fallback: RuleOverride = { action: info.action, then: [...info.then], notify: info.notify, escalate: false };
    let rule = merge(fallback, policy.xids[k]);
    rule = merge(rule, poolOver?.xids?.[k]);
    const src = poolOver?.xids?.[k] ? `XID ${k} (pool ${pool})` : `XID ${k}`;
    const chosen = chooseProfile(policy.profiles, { pool, gpuModel: t.gpuModel, xid: t.xid }, rule);
    const r = chosen
      ? { ...finish(merge(rule, chosen.override), `${src} (profile ${chosen.name})`, undefined), profile: chosen.name }
      : finish(rule, src, undefined);
    // Never escalate on XID 45 noise, whatever a file says (the schema rejects it too).
    // Alone on its GPU (plan.ts ignores one that follows another XID): NVIDIA says restart Fabric Manager, a person's
    // call.
    if (t.xid === 45) return { ...r, escalate: null, source: `${r.source} (alone: restart Fabric Manager)` };
    if (NVLINK5_XIDS.has(t.xid)) return nvlink5Rule(r, t);
    return r;
  }
  let rule = merge(CONDITION_DEFAULTS[t.condition], policy.conditions[t.condition]);
  rule = merge(rule, poolOver?.conditions?.[t.condition]);
  const r = finish(
    rule,
    poolOver?.conditions?.[t.condition] ? `${t.condition} (pool ${pool})` : t.condition,
    t.severity,
  );
  if (t.condition === 'monitoring-degraded')
    return { ...r, action: r.action === 'ignore' ? 'ignore' : 'observe', then: [], escalate: null };
  return r;
}

/**
 * NVIDIA's WORKFLOW_NVLINK5_ERR: the decode sheet's row decides (nvlink5Verdict in events/xid/nvlink5.ts).
 * IGNORE and XID_154_EVAL (the XID 154 that follows says what to do) observe; RESET_GPU keeps the XID's
 * rule. Undecoded (NVML only, or a row the sheet lacks): a line that says Nonfatal is observed and counted.
 */
function nvlink5Rule(r: Rule, t: Extract<RuleTrigger, { kind: 'xid' }>): Rule {
  const v = nvlink5Verdict(t.xid, t.nvlink, t.severity);
  if (v.verdict === 'observe')
    return { ...r, action: 'observe', then: [], escalate: null, source: `${r.source} (${v.why})` };
  return v.decode ? { ...r, source: `${r.source} (${v.why})` } : r;
}

function finish(rule: RuleOverride, source: string, severity: 'info' | 'warning' | 'critical' | undefined): Rule {
  const bySeverity = severity ? rule.bySeverity?.[severity] : undefined;
  const action = bySeverity ?? rule.action ?? 'observe';
  return {
    action,
    // A chain never repeats the action itself (a pool that turns 94 into quarantine-gpu keeps `then:
    // [quarantine-gpu]`).
    then: (rule.then ?? []).filter((a, i, all) => a !== action && all.indexOf(a) === i),
    escalate: rule.escalate ? { ...rule.escalate } : null,
    notify: rule.notify ?? false,
    source: bySeverity ? `${source} (${severity})` : source,
    letWorkFinish: rule.letWorkFinish ? { ...rule.letWorkFinish } : null,
  };
}
