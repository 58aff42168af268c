import type { QuotaConfig } from '../quota/index.ts';
import { HOLD_UNTIL_ANNOTATION, rollbackQuotas } from '../quota/index.ts';
import type { CommandPorts } from './command-ports.ts';

/** The gpu-reflex quotas as they are now, per team namespace, with any rollback hold. */
export async function quotaShow(p: CommandPorts, config: QuotaConfig): Promise<string> {
  const mine = (await p.kube.quotas.listQuotas())
    .filter((q) => q.name === config.quotaName)
    .sort((a, b) => a.namespace.localeCompare(b.namespace));
  const lines = config.teams.flatMap((t) =>
    t.namespaces.map((ns) => {
      const q = mine.find((x) => x.namespace === ns);
      if (!q) return `${ns} (${t.name}): no ResourceQuota ${config.quotaName} yet`;
      // status.used is the quota controller's, written after the quota (and behind it when the controller lags): a
      // key it has not reported is unknown — the namespace may be using all of it — not "used 0".
      const hard = Object.entries(q.hard)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([k, v]) => `${k} ${v} (used ${q.used[k] ?? 'unknown: not in the quota status yet'})`);
      const hold = q.annotations?.[HOLD_UNTIL_ANNOTATION];
      return (
        `${ns} (${t.name}): ${hard.join(', ') || 'no limits'}` +
        `${hold && Date.parse(hold) > p.clock.now() ? `; held from rewrites until ${hold}` : ''}`
      );
    }),
  );
  return lines.join('\n');
}

export const ROLLBACK_HOLD_MINUTES = 60;

/** `quota rollback [NAMESPACE]`: the rewriter's own rollback, held from rewrites for an hour. */
export async function quotaRollback(
  p: CommandPorts,
  config: QuotaConfig,
  namespace: string | undefined,
): Promise<string> {
  const dryRun = p.dryRun;
  const r = await rollbackQuotas(
    { ...p.kube, publisher: p.publisher, notifier: p.notifier, clock: p.clock, logger: p.logger, config },
    namespace ? [namespace] : undefined,
    ROLLBACK_HOLD_MINUTES,
  );
  const values = (h: Record<string, string>) =>
    Object.entries(h)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([k, v]) => `${k} ${v}`)
      .join(', ') || 'none';
  const lines = [
    ...r.restored.flatMap((x) => [
      x.deleted
        ? `${dryRun ? 'would delete' : 'deleted'} ${x.namespace}'s quota (${values(x.from)}): gpu-reflex had ` +
          'created it; rewrite-quotas writes it again at its next round'
        : `${dryRun ? 'would roll back' : 'rolled back'} ${x.namespace}: ${values(x.from)} → ${values(x.to)}, held ` +
          `from rewrites for ${ROLLBACK_HOLD_MINUTES} min`,
      ...x.warnings.map((w) => `warning: ${x.namespace}: ${w}`),
    ]),
    ...r.refused.map((x) => `${x.namespace}: refused: ${x.why}`),
    ...r.skipped.map((x) => `${x.namespace}: ${x.why}`),
  ];
  return (dryRun ? ['dry run, nothing changed:', ...lines] : lines).join('\n') || 'no gpu-reflex quota to roll back';
}
