/**
 * `bench quota`: the quota planner on 500 team namespaces × 6 resources (plan time), and how it
 * shares beside a static split (each team a fixed weight share, as quotas edited by hand are) on
 * the same fleet: how much of what the teams want is quota they may use, and how much quota sits
 * unused on idle teams.
 */
import { performance } from 'node:perf_hooks';
import { QuotaConfigSchema, type QuotaConfig } from '../functions/quota/core/config.ts';
import { planQuotas, type QuotaFacts } from '../functions/quota/core/planner.ts';
import { mulberry32 } from '../infra/local/bus/router.ts';
import { below, info, percentile, type BenchSuite, type Measurement } from './harness.ts';

const RESOURCES = [
  'nvidia.com/gpu',
  'nvidia.com/mig-1g.10gb',
  'nvidia.com/mig-2g.20gb',
  'nvidia.com/mig-3g.40gb',
  'aliyun.com/gpu-mem',
  'amd.com/gpu',
];

const rng = mulberry32;

/** 500 namespaces in 125 teams of 4; a third of the teams idle, a third quota-bound. */
export function benchQuotaFleet(seed = 3): { config: QuotaConfig; facts: QuotaFacts; bound: Set<string> } {
  const r = rng(seed);
  const capacity: Record<string, number> = {
    'nvidia.com/gpu': 4000,
    'nvidia.com/mig-1g.10gb': 2800,
    'nvidia.com/mig-2g.20gb': 1200,
    'nvidia.com/mig-3g.40gb': 800,
    'aliyun.com/gpu-mem': 24_000,
    'amd.com/gpu': 600,
  };
  const teams = Array.from({ length: 125 }, (_, t) => ({
    name: `team-${t}`,
    namespaces: Array.from({ length: 4 }, (_, k) => `team-${t}-ns-${k}`),
    weight: 1 + Math.floor(r() * 4),
    guarantee: Object.fromEntries(RESOURCES.map((res) => [res, Math.floor((capacity[res]! / 125) * 0.5 * r())])),
  }));
  const config = QuotaConfigSchema.parse({
    resources: RESOURCES,
    overcommit: 1.1,
    buffer: { 'nvidia.com/gpu': 80 },
    teams,
  });
  const usage: Record<string, Record<string, number>> = {};
  const current: Record<string, Record<string, number>> = {};
  const bound = new Set<string>();
  teams.forEach((t, i) => {
    const kind = i % 3; // 0 idle, 1 busy within quota, 2 quota-bound
    if (kind === 2) bound.add(t.name);
    for (const ns of t.namespaces) {
      usage[ns] = {};
      current[ns] = {};
      for (const res of RESOURCES) {
        const fair = capacity[res]! / 500;
        const used = kind === 0 ? 0 : Math.floor(fair * (kind === 1 ? 0.6 : 1.3) * (0.5 + r()));
        usage[ns][res] = used;
        current[ns][res] = kind === 2 ? used : Math.ceil(fair * 1.2);
      }
    }
  });
  return { config, facts: { capacity, usage, current }, bound };
}

/** Hand-edited quotas: each team a fixed share of capacity by weight, whatever it uses. */
function staticShare(config: QuotaConfig, facts: QuotaFacts, res: string): Map<string, number> {
  const total = config.teams.reduce((s, t) => s + t.weight, 0);
  return new Map(config.teams.map((t) => [t.name, Math.floor(((facts.capacity[res] ?? 0) * t.weight) / total)]));
}

export const quotaSuite: BenchSuite = {
  name: 'quota',
  summary:
    'quota planner: 500 namespaces × 6 resources plan time; demand served and idle quota beside a static weight split',
  async run(progress) {
    const rows: Measurement[] = [];
    const { config, facts, bound } = benchQuotaFleet();
    progress('planning 500 namespaces × 6 resources, 9 runs');
    const times: number[] = [];
    let plan = planQuotas(config, facts);
    for (let i = 0; i < 9; i++) {
      const t0 = performance.now();
      plan = planQuotas(config, facts);
      times.push(performance.now() - t0);
    }
    rows.push(below('plan time, 500 namespaces × 6 resources (median)', percentile(times, 50), 'ms', 200));
    rows.push(below('plan time (slowest of 9)', Math.max(...times), 'ms', 200));
    // Fairness on whole GPUs: what the teams want (their usage, plus a burst when quota-bound)
    // that their quota lets them have.
    const res = 'nvidia.com/gpu';
    const ours = new Map(plan.teams.map((t) => [t.team, t.resources[res]!]));
    const fixed = staticShare(config, facts, res);
    let want = 0;
    let servedOurs = 0;
    let servedStatic = 0;
    let idleOurs = 0;
    let idleStatic = 0;
    let boundServedOurs = 0;
    let boundServedStatic = 0;
    let boundWant = 0;
    for (const [team, x] of ours) {
      const s = fixed.get(team)!;
      want += x.want;
      servedOurs += Math.min(x.want, x.hard);
      servedStatic += Math.min(x.want, s);
      idleOurs += Math.max(0, x.hard - Math.max(x.want, x.guarantee));
      idleStatic += Math.max(0, s - x.want);
      if (bound.has(team)) {
        boundWant += x.want;
        boundServedOurs += Math.min(x.want, x.hard);
        boundServedStatic += Math.min(x.want, s);
      }
    }
    rows.push(info('GPUs wanted that quota allows: gpu-reflex', Math.round((1000 * servedOurs) / want) / 10, '%'));
    rows.push(info('GPUs wanted that quota allows: static split', Math.round((1000 * servedStatic) / want) / 10, '%'));
    rows.push(info('quota-bound teams served: gpu-reflex', Math.round((1000 * boundServedOurs) / boundWant) / 10, '%'));
    rows.push(
      info('quota-bound teams served: static split', Math.round((1000 * boundServedStatic) / boundWant) / 10, '%'),
    );
    rows.push(info('GPU quota idle beyond want and guarantee: gpu-reflex', idleOurs, 'GPUs'));
    rows.push(info('GPU quota idle beyond want: static split', idleStatic, 'GPUs'));
    rows.push(info('warnings', plan.warnings.length, ''));
    return rows;
  },
};
