/**
 * Policy profiles (docs/remediation.md "Profiles"): overrides of an XID's rule that apply where a
 * profile's match holds — node pools, GPU models, NVIDIA resolution classes or explicit XID codes.
 * One profile decides an XID: the most specific that matches. Ties are refused when the policy loads
 * (`profileProblems`), so which profile decides never depends on the order of a file. Pure.
 */
import { describeXid, XID_CATALOG, type NvidiaBucket, type RemediationAction } from '../../../events/index.ts';
import { takesCapacity } from './blast-radius.ts';
import type { Profile, RuleOverride } from './policy-schema.ts';

/** What a profile is matched against: the node's pool, its GPU's model, and the XID. */
export interface ProfileSubject {
  pool: string | undefined;
  /** The GPU's product name (the event's GPU name, else the node's product label), when known. */
  gpuModel: string | undefined;
  xid: number;
}

/** The profile that decided, and the override it brings. */
export interface ProfileChoice {
  name: string;
  override: RuleOverride;
}

/**
 * How specific a profile is for one XID: first how many of pool, GPU model and XID it names; then an
 * explicit code beats a class (`xids: [79]` over `xidClasses: [RESTART_BM]`). Undefined: no match.
 */
type Rank = readonly [dimensions: number, byCode: number];

/**
 * GPU Feature Discovery writes NVML's product name with spaces as `-` (`NVIDIA-H100-80GB-HBM3`,
 * NVIDIA/gpu-feature-discovery `internal/lm/resource.go`); the event carries NVML's own spelling.
 * Both are compared in that form, case-insensitively.
 */
export function normalModel(name: string): string {
  return name.trim().replace(/\s+/g, '-').toLowerCase();
}

/** `*` is any run of characters; everything else is literal (after normalModel). */
export function modelMatches(pattern: string, model: string): boolean {
  const p = normalModel(pattern);
  const re = new RegExp(`^${p.split('*').map(escapeRe).join('.*')}$`);
  return re.test(normalModel(model));
}

function escapeRe(s: string): string {
  return s.replace(/[.+?^${}()|[\]\\]/g, '\\$&');
}

/** Whether some model name matches both globs (product automaton of two `*`-patterns: is it non-empty?). */
export function modelsOverlap(a: string, b: string): boolean {
  const p = normalModel(a);
  const q = normalModel(b);
  const seen = new Set<string>();
  const walk = (i: number, j: number): boolean => {
    const k = `${i},${j}`;
    if (seen.has(k)) return false;
    seen.add(k);
    if (i === p.length && j === q.length) return true;
    if (p[i] === '*' && (walk(i + 1, j) || (j < q.length && walk(i, j + 1)))) return true;
    if (q[j] === '*' && (walk(i, j + 1) || (i < p.length && walk(i + 1, j)))) return true;
    return i < p.length && j < q.length && p[i] !== '*' && q[j] !== '*' && p[i] === q[j] && walk(i + 1, j + 1);
  };
  return walk(0, 0);
}

function classOf(xid: number): NvidiaBucket {
  return describeXid(xid).nvidiaAction;
}

function rankOf(p: Profile, s: ProfileSubject): Rank | undefined {
  const m = p.match;
  if (m.pools && (s.pool === undefined || !m.pools.includes(s.pool))) return undefined;
  if (m.gpuModels && (s.gpuModel === undefined || !m.gpuModels.some((g) => modelMatches(g, s.gpuModel!))))
    return undefined;
  const byCode = m.xids?.includes(s.xid) ?? false;
  const byClass = m.xidClasses?.includes(classOf(s.xid)) ?? false;
  if ((m.xids || m.xidClasses) && !byCode && !byClass) return undefined;
  const dims = (m.pools ? 1 : 0) + (m.gpuModels ? 1 : 0) + (m.xids || m.xidClasses ? 1 : 0);
  return [dims, byCode ? 1 : 0];
}

const cmpRank = (a: Rank, b: Rank) => a[0] - b[0] || a[1] - b[1];

/** Whether the rule `over` merged onto `base` can take capacity (fence, drain, reboot, replace). */
function fences(base: RuleOverride, over: RuleOverride): boolean {
  const r = { ...base, ...over };
  const ladder: RemediationAction[] = [r.action ?? 'observe', ...(r.escalate ? (r.then ?? []) : [])];
  return ladder.some(takesCapacity);
}

/**
 * The profile that decides XID `s.xid` here, or undefined. `table` is the rule before profiles (defaults,
 * file, pool). An IGNORE-class XID is fenced by a profile only if the profile names it by code: a
 * profile that would make it fence through a class, a pool or a model alone does not match it.
 */
export function chooseProfile(
  profiles: Readonly<Record<string, Profile>>,
  s: ProfileSubject,
  table: RuleOverride,
): ProfileChoice | undefined {
  let best: { name: string; p: Profile; rank: Rank } | undefined;
  for (const [name, p] of Object.entries(profiles ?? {})) {
    const rank = rankOf(p, s);
    if (!rank) continue;
    const o = overrideOf(p);
    if (classOf(s.xid) === 'IGNORE' && rank[1] === 0 && fences(table, o) && !fences(table, {})) continue;
    // Equal ranks cannot both match (profileProblems refuses them at load); `>` keeps the first anyway.
    if (!best || cmpRank(rank, best.rank) > 0) best = { name, p, rank };
  }
  return best ? { name: best.name, override: overrideOf(best.p) } : undefined;
}

function overrideOf(p: Profile): RuleOverride {
  const { match: _match, ...o } = p;
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as RuleOverride;
}

/** Codes a profile's XID dimension covers: its codes, and every catalog code of its classes. */
function codesOf(p: Profile): Set<number> | undefined {
  const m = p.match;
  if (!m.xids && !m.xidClasses) return undefined;
  const out = new Set(m.xids ?? []);
  for (const info of XID_CATALOG.values()) if (m.xidClasses?.includes(info.nvidiaAction)) out.add(info.xid);
  // A class that unlisted codes carry (NONE_GIVEN): stand one of them in for all.
  if (m.xidClasses?.includes('NONE_GIVEN')) out.add(UNLISTED_STAND_IN);
  return out;
}
/** An XID NVIDIA's catalog does not list, standing for every such code in the tie check. */
const UNLISTED_STAND_IN = 998;

/** One problem of the profiles: where (`profiles.<name>.<field>`) and what. */
export interface ProfileProblem {
  path: (string | number)[];
  message: string;
}

/**
 * What is wrong with a set of profiles as a whole: two of equal rank that could both match one event
 * (the decision would depend on their order), and a class IGNORE profile that fences.
 */
export function profileProblems(profiles: Readonly<Record<string, Profile>>): ProfileProblem[] {
  const problems: ProfileProblem[] = [];
  const entries = Object.entries(profiles).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  for (const [name, p] of entries) {
    if (p.match.xidClasses?.includes('IGNORE') && fences({}, overrideOf(p)))
      problems.push({
        path: [name, 'match', 'xidClasses'],
        message:
          'a profile never fences NVIDIA IGNORE-class XIDs by class: name the codes in match.xids, ' +
          'or leave action/then to observe',
      });
  }
  for (let i = 0; i < entries.length; i++)
    for (let j = i + 1; j < entries.length; j++) {
      const [an, a] = entries[i]!;
      const [bn, b] = entries[j]!;
      const code = tiedOn(a, b);
      if (code === undefined) continue;
      const on = code === null ? 'any XID' : code === UNLISTED_STAND_IN ? 'an XID NVIDIA does not list' : `XID ${code}`;
      problems.push({
        path: [bn, 'match'],
        message:
          `profiles ${an} and ${bn} both match ${on} with the same rank: make one more specific ` +
          '(name a pool, a GPU model or the XID code) or make their matches disjoint',
      });
    }
  return problems;
}

/** The XID both profiles match at equal rank (null: any XID), or undefined when they never tie. */
function tiedOn(a: Profile, b: Profile): number | null | undefined {
  const [ma, mb] = [a.match, b.match];
  if (ma.pools && mb.pools && !ma.pools.some((x) => mb.pools!.includes(x))) return undefined;
  if (ma.gpuModels && mb.gpuModels && !ma.gpuModels.some((x) => mb.gpuModels!.some((y) => modelsOverlap(x, y))))
    return undefined;
  const dims = (m: Profile['match']) => (m.pools ? 1 : 0) + (m.gpuModels ? 1 : 0);
  const ca = codesOf(a);
  const cb = codesOf(b);
  if (!ca && !cb) return dims(ma) === dims(mb) ? null : undefined;
  const both = ca && cb ? [...ca].filter((c) => cb.has(c)) : [...(ca ?? cb)!];
  const rank = (m: Profile['match'], c: number): Rank | undefined =>
    m.xids || m.xidClasses ? [dims(m) + 1, m.xids?.includes(c) ? 1 : 0] : [dims(m), 0];
  return both.find((c) => cmpRank(rank(ma, c)!, rank(mb, c)!) === 0);
}
