import { MIG_LAYOUT_CHANGE, SCHEMA_VERSION, SOURCES, type MigLayoutChangeDetail } from '../../events/index.ts';
import type { PublishedEvent } from '../adapters/bus.ts';
import type { Applied } from '../lib/apply.ts';
import { countProfiles } from './core/layout.ts';
import type { MigHolder } from './core/planner.ts';
import type { MigStep } from './core/rebalance.ts';

/** What a relayout step tells the bus (the MIG Layout Change event) and the log, in words. */
const profileCounts = (l: readonly string[]) => Object.fromEntries(countProfiles(l));

export function layoutEvent(
  node: string,
  step: Omit<MigStep, 'state'> & { state?: MigLayoutChangeDetail['state'] },
  now: Date,
  demand: Record<string, number>,
  preempted: readonly MigHolder[] = [],
  applied?: Applied,
): PublishedEvent | undefined {
  const r = step.record;
  if (!step.state || !r) return undefined;
  const detail: MigLayoutChangeDetail = {
    schemaVersion: SCHEMA_VERSION,
    // A refused start (`planned`) must not share the id of the start that may follow once fixed.
    eventId: `mig:${node}:${r.config}:${step.state === 'planned' ? 'planned' : step.kind}`.slice(0, 128),
    occurredAt: now.toISOString(),
    node,
    config: r.config,
    state: step.state,
    gpus: r.gpus.map((g) => ({ index: g.gpu, from: profileCounts(g.from), to: profileCounts(g.to) })),
    ...(Object.keys(demand).length > 0 ? { demand } : {}),
    evictedPods: applied?.evictions.filter((e) => e.result === 'done' || e.result === 'already').length ?? 0,
    ...(preempted.length > 0
      ? {
          preempted: preempted
            .slice(0, 64)
            .map((p) => ({ namespace: p.namespace, name: p.name, priority: p.priority })),
        }
      : {}),
    reason: `${step.why}${blockedWords(step, applied)}`.slice(0, 2048),
    dryRun: false,
  };
  return { source: SOURCES.functions, detailType: MIG_LAYOUT_CHANGE, detail, resources: [`node/${node}`] };
}

/** What the Eviction API refused, in words: that GPU is not relaid this round. */
export function blockedWords(step: Pick<MigStep, 'evictions'>, applied?: Applied): string {
  const blocked = (step.evictions ?? []).filter(
    (_, i) => applied?.evictions[i]?.result === 'blocked' || applied?.evictions[i]?.result === 'failed',
  );
  if (blocked.length === 0) return '';
  return (
    `; eviction of ${blocked.map((p) => `${p.namespace}/${p.name}`).join(', ')} refused ` +
    `(${applied!.evictions.find((e) => e.result === 'blocked' || e.result === 'failed')?.message ?? ''}): not ` +
    `relaid this round, asked again each minute`
  );
}
