/** The words of the timeline's event lines (timeline-events.ts): pods, planned steps, remediations, utilization. */

export type PodName = (uid: string) => string | undefined;

export function podsText(pods: unknown, name: PodName): string {
  if (!Array.isArray(pods) || pods.length === 0) return '';
  const names = pods.map((p: { uid?: string; namespace?: string; name?: string }) =>
    p.name ? `${p.namespace}/${p.name}` : (p.uid && name(p.uid)) || p.uid || '?',
  );
  return `, pods ${names.slice(0, 4).join(', ')}${names.length > 4 ? ` +${names.length - 4}` : ''}`;
}

interface Step {
  kind: string;
  target: string;
  result: string;
  message?: string;
}

/**
 * What a dry run's step would have done, in the conditional's bare verb. Labels and annotations are
 * bookkeeping; a notice is left out, as the dry run's notifier answers whether or not a chat is set.
 */
const WOULD_STEP: Record<string, string> = {
  taint: 'taint',
  untaint: 'untaint',
  cordon: 'cordon',
  uncordon: 'uncordon',
  fence: 'fence',
  unfence: 'unfence',
  reboot: 'reboot',
  replace: 'replace',
  approval: 'ask for approval',
};
/** A dry run's phase, said as what the live run would be doing. */
const WOULD_PHASE: Record<string, string> = {
  acted: 'would act',
  partial: 'would act in part',
  'awaiting-approval': 'would wait for approval',
  'awaiting-repair': 'would wait for repair',
  restored: 'would restore',
  decided: 'would decide',
};

/**
 * A dry run's Remediation: `drain-node would act: taint, cordon, evict 2 pods (dry run: nothing
 * changed)`, never "acted", since nothing was done.
 */
function wouldText(d: Record<string, unknown>, steps: Step[]): string {
  const kinds = [...new Set(steps.filter((s) => s.result === 'dry-run').map((s) => s.kind))];
  const evict = steps.filter((s) => s.kind === 'evict' && s.result === 'dry-run').length;
  const verbs = kinds.flatMap((k) =>
    k === 'evict' ? [`evict ${evict} pod${evict === 1 ? '' : 's'}`] : WOULD_STEP[k] ? [WOULD_STEP[k]] : [],
  );
  const phase = WOULD_PHASE[String(d.phase)] ?? String(d.phase);
  return `${String(d.action)} ${phase}${verbs.length ? `: ${verbs.join(', ')}` : ''} (dry run: nothing changed)`;
}

/** `drain-node acted: tainted, cordoned, evicting 2 pods`; the reason goes in `why`. */
export function remediationText(d: Record<string, unknown>): string {
  const steps = (d.steps as Step[] | undefined) ?? [];
  if (d.dryRun === true) return wouldText(d, steps);
  const done = (k: string) => steps.filter((s) => s.kind === k && (s.result === 'done' || s.result === 'already'));
  const parts: string[] = [];
  if (done('taint').length) parts.push('tainted');
  if (done('cordon').length) parts.push('cordoned');
  const evicted = done('evict').length;
  const blocked = steps.filter((s) => s.kind === 'evict' && s.result === 'blocked').length;
  if (evicted) parts.push(`evicting ${evicted} pod${evicted === 1 ? '' : 's'}`);
  if (blocked) parts.push(`${blocked} eviction${blocked === 1 ? '' : 's'} blocked by a disruption budget`);
  for (const k of ['uncordon', 'untaint', 'reboot', 'replace', 'notify', 'approval']) if (done(k).length) parts.push(k);
  const failed = steps.filter((s) => s.result === 'failed');
  if (failed.length) parts.push(`${failed.length} step${failed.length === 1 ? '' : 's'} failed`);
  return `${String(d.action)} ${String(d.phase)}${parts.length ? `: ${parts.join(', ')}` : ''}`;
}

/** Average utilization where NVML reports it; MIG GPUs report none (NVML answers NOT_SUPPORTED). */
export function utilizationText(d: Record<string, unknown>): string {
  type Agg = { avg?: number };
  const gpus =
    (d.gpus as { utilPercent?: Agg; framebufferUsedPercent?: Agg; migDevices?: unknown[] }[] | undefined) ?? [];
  const avg = (xs: number[]) => xs.reduce((a, x) => a + x, 0) / xs.length;
  const util = gpus.flatMap((g) => (g.utilPercent?.avg !== undefined ? [g.utilPercent.avg] : []));
  const silent = gpus.filter((g) => g.utilPercent?.avg === undefined);
  const head = `${gpus.length} GPU${gpus.length === 1 ? '' : 's'}, ${String(d.samples)} samples`;
  const parts: string[] = [];
  if (util.length)
    parts.push(`average utilization ${avg(util).toFixed(0)}%${silent.length ? ` on ${util.length}` : ''}`);
  if (silent.length) {
    // What NVML does give with MIG on: memory per instance. An instance with memory in use is busy.
    const instances = silent.flatMap((g) => (g.migDevices ?? []) as { framebufferUsedPercent?: { max?: number } }[]);
    const busy = instances.filter((m) => (m.framebufferUsedPercent?.max ?? 0) > 0).length;
    const fb = silent.flatMap((g) =>
      g.framebufferUsedPercent?.avg !== undefined ? [g.framebufferUsedPercent.avg] : [],
    );
    const who = util.length ? ` on ${silent.length} GPU${silent.length === 1 ? '' : 's'}` : '';
    const facts = [
      ...(instances.length ? [`${busy} of ${instances.length} MIG instances in use`] : []),
      ...(fb.length ? [`framebuffer ${avg(fb).toFixed(0)}% used`] : []),
    ];
    parts.push(
      `utilization not ` +
        `reported${who}${instances.length ? ' (MIG on: NVML has none per GPU or instance)' : ''}` +
        `${facts.length ? `; ${facts.join(', ')}` : ''}`,
    );
  }
  return `${head}${parts.length ? `, ${parts.join('; ')}` : ''}`;
}
