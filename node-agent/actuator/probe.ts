/**
 * The actuator's `probe` (actuator.ts): after `probeSeconds` of watching, NVML answers and still
 * enumerates the GPU under its UUID (counted), recovery action none (unknown is not none), no row remap
 * pending or failed, no new uncorrected ECC error and no XID on it since the probe began; DCGM's
 * diagnostic too where the request asks (`diag`), run once the window is over and never awaited.
 *
 * Across an agent restart (a rolling update, an OOM kill): the running answer on the Node carries what the
 * probe has watched so far (`watch`: when it began, the ECC baseline, the XIDs since), rewritten when that
 * changes; a restarted agent that finds it resumes the probe with that evidence and watches a full
 * `probeSeconds` again itself before it may pass (the gap it was down is not watched time).
 */
import type {
  DcgmDiagLevel,
  GpuActionRequest,
  GpuActionState,
  GpuDiag,
  GpuProbe,
  GpuProbeWatch,
} from '../../events/index.ts';
import type { ActuatorOptions } from './options.ts';

type Base = Pick<GpuActionState, 'action' | 'gpuUuid' | 'at' | 'owner'>;

interface Probing {
  /** When the probe began: its XIDs count from then (an earlier run of the agent's start, when resumed). */
  startedAt: number;
  baseline: number;
  /** The XIDs an earlier run of the agent recorded on the running answer (resumed); none otherwise. */
  earlier: number[];
  /** When this run of the agent began watching: the window is a full `probeSeconds` from here. */
  watchFrom: number;
  /** The DCGM diagnostic the probe asked for: under way, then its verdict (it runs for minutes: never awaited). */
  diag?: { verdict?: GpuDiag };
}

/**
 * What a restarted agent resumes a probe from: the running answer an earlier run wrote. One without `watch` was
 * written by an agent older than that field: when it began, its ECC baseline and the XIDs it saw are lost, and
 * starting over could hide an error raised before (or while no agent ran), so the probe does not pass — a
 * `failed: interrupted` answer, as an interrupted reset's; remediation asks again or climbs its ladder. Once,
 * for the probes under way when agents move to a version that writes `watch`.
 */
function resumed(prior: GpuActionState, now: number): Probing | { lost: string } {
  const w = prior.watch;
  if (!w)
    return {
      lost:
        `interrupted: the agent restarted during the probe (last answered ${prior.at}) and the answer it found ` +
        `records no evidence to resume from (an older agent's); not passed on a window started over`,
    };
  return { startedAt: Date.parse(w.since), baseline: w.eccBaseline, earlier: [...w.xids], watchFrom: now };
}

/** Same evidence and words: the answer on the Node stands (a tick's time alone is no reason to write it again). */
function sameRunning(a: GpuActionState | undefined, b: GpuActionState): boolean {
  const [x, y] = [a?.watch, b.watch];
  return (
    a?.state === 'running' &&
    a.reason === b.reason &&
    a.owner === b.owner &&
    x?.since === y?.since &&
    x?.eccBaseline === y?.eccBaseline &&
    x?.xids.join() === y?.xids.join()
  );
}

export class GpuProbes {
  /** Probes under way (in memory; a restarted agent resumes one from its running answer: `resumed`). */
  private readonly probing = new Map<string, Probing>();

  constructor(private readonly o: Pick<ActuatorOptions, 'gpus' | 'xids' | 'diag' | 'log'>) {}

  /** Forgets the probes of requests nobody asks about any more. */
  forget(wanted: ReadonlySet<string>): void {
    for (const id of this.probing.keys()) if (!wanted.has(id)) this.probing.delete(id);
  }

  /** Starts the probe's diagnostic; its verdict lands on `p` (a later tick reads it). Never throws. */
  private startDiag(id: string, p: Probing, index: number | undefined, level: DcgmDiagLevel): void {
    const run = this.o.diag;
    p.diag = {};
    this.probing.set(id, p);
    const verdict: Promise<GpuDiag> =
      index === undefined
        ? Promise.resolve({ level, result: 'unavailable', failed: [], reason: 'NVML does not list the GPU' })
        : run
          ? run(index, level).catch((err: unknown) => ({
              level,
              result: 'unavailable' as const,
              failed: [],
              reason: `dcgmi: ${err instanceof Error ? err.message : String(err)}`.slice(0, 512),
            }))
          : Promise.resolve({ level, result: 'unavailable', failed: [], reason: 'this agent runs no DCGM diagnostic' });
    void verdict.then((v) => {
      p.diag = { verdict: v };
      this.o.log?.(
        `DCGM diagnostic level ${level} of GPU ${index ?? '?'}: ${v.result}${v.reason ? ` (${v.reason})` : ''}`,
      );
    });
  }

  /**
   * One tick of a probe request (`index`: the GPU's NVML index, undefined when NVML does not list it; `prior`: its
   * answer on the Node, which a restarted agent resumes from).
   */
  step(
    r: GpuActionRequest,
    base: Base,
    index: number | undefined,
    now: number,
    prior?: GpuActionState,
  ): GpuActionState {
    const reading = this.o.gpus.health(r.gpuUuid);
    let p = this.probing.get(r.id);
    if (!p) {
      const from =
        prior?.state === 'running'
          ? resumed(prior, now)
          : { startedAt: now, baseline: reading.eccUncorrected, earlier: [], watchFrom: now };
      if ('lost' in from) return { ...base, state: 'failed', reason: from.lost };
      p = from;
      this.probing.set(r.id, p);
    }
    // A count below the baseline: the counter was reset (a driver reload) and what it held is gone; no delta of it
    // can say "no new error". (NVML not answering reads 0: that probe ends below, not passed, the GPU missing.)
    if (reading.nvmlAnswers && reading.eccUncorrected < p.baseline) {
      this.probing.delete(r.id);
      return {
        ...base,
        state: 'failed',
        reason:
          `evidence lost: the GPU's uncorrected ECC count reads ${reading.eccUncorrected}, below the ` +
          `${p.baseline} recorded when the probe began (the counter was reset); not passed`,
      };
    }
    // ECC on, its uncorrected count unreadable: no delta can say "no new error", and waiting reads no more of it.
    if (reading.nvmlAnswers && reading.eccUnreadable) {
      this.probing.delete(r.id);
      return {
        ...base,
        state: 'failed',
        reason:
          'evidence unknown: ECC is on, but NVML gives no aggregate uncorrected ECC count for this GPU, so the ' +
          'probe cannot say no uncorrected error happened; not passed',
      };
    }
    const seen = this.o.xids(r.gpuUuid, p.startedAt);
    // No XID source watches this GPU: "none seen" is no evidence of none raised, and waiting sees no more of them.
    if (!Array.isArray(seen)) {
      this.probing.delete(r.id);
      return {
        ...base,
        state: 'failed',
        reason: `evidence unknown: ${seen.unknown}, so the probe cannot say no XID happened; not passed`.slice(0, 512),
      };
    }
    const xids = [...p.earlier, ...seen].slice(0, 64);
    const running = (reason: string) => this.running(base, p, xids, reason, prior);
    if (now - p.watchFrom < (r.probeSeconds ?? 0) * 1000) return running(`watching for ${r.probeSeconds} s`);
    // The window is over: DCGM's diagnostic, where asked, runs now, and the probe ends when it has a verdict.
    if (r.diag !== undefined && !p.diag?.verdict) {
      if (!p.diag) this.startDiag(r.id, p, index, r.diag);
      if (!p.diag?.verdict) return running(`DCGM diagnostic level ${r.diag} running`);
    }
    this.probing.delete(r.id);
    const probe: GpuProbe = {
      nvmlAnswers: reading.nvmlAnswers,
      recoveryAction: reading.recoveryAction,
      remapPending: reading.remapPending,
      remapFailed: reading.remapFailed,
      eccUncorrectedDelta: Math.max(0, reading.eccUncorrected - p.baseline),
      xidsDuringProbe: xids,
      // NVML still lists the GPU under its UUID: a GPU that did not come back (from a reset or a
      // reboot) is not counted, whatever its last reading said.
      counted: index !== undefined,
      ...(p.diag?.verdict ? { diag: p.diag.verdict } : {}),
      passed: false,
    };
    // Evidence only: every field must say healthy; `unknown` (no field 230) is not `none`.
    probe.passed =
      probe.counted === true &&
      probe.nvmlAnswers &&
      probe.recoveryAction === 'none' &&
      !probe.remapPending &&
      !probe.remapFailed &&
      probe.eccUncorrectedDelta === 0 &&
      probe.xidsDuringProbe.length === 0 &&
      (r.diag === undefined || probe.diag?.result === 'pass');
    return { ...base, state: 'done', probe, reason: probe.passed ? 'probe passed' : 'probe did not pass' };
  }

  /** The running answer, with the evidence so far; the one on the Node when nothing in it changed (no write). */
  private running(
    base: Base,
    p: Probing,
    xids: number[],
    reason: string,
    prior: GpuActionState | undefined,
  ): GpuActionState {
    const watch: GpuProbeWatch = { since: new Date(p.startedAt).toISOString(), eccBaseline: p.baseline, xids };
    const next: GpuActionState = { ...base, state: 'running', reason, watch };
    return prior && sameRunning(prior, next) ? prior : next;
  }
}
