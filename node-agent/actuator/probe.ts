/**
 * The actuator's `probe` (actuator.ts): after `probeSeconds` of watching, NVML answers and still
 * enumerates the GPU under its UUID (counted), recovery action none (unknown is not none), no row remap
 * pending or failed, no new uncorrected ECC error and no XID on it since the probe began; DCGM's
 * diagnostic too where the request asks (`diag`), run once the window is over and never awaited.
 */
import type { DcgmDiagLevel, GpuActionRequest, GpuActionState, GpuDiag, GpuProbe } from '../../events/index.ts';
import type { ActuatorOptions } from './options.ts';

type Base = Pick<GpuActionState, 'action' | 'gpuUuid' | 'at'>;

interface Probing {
  startedAt: number;
  baseline: number;
  /** The DCGM diagnostic the probe asked for: under way, then its verdict (it runs for minutes: never awaited). */
  diag?: { verdict?: GpuDiag };
}

export class GpuProbes {
  /** Probes under way (in memory: a restarted agent starts a probe over). */
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

  /** One tick of a probe request (`index`: the GPU's NVML index, undefined when NVML does not list it). */
  step(r: GpuActionRequest, base: Base, index: number | undefined, now: number): GpuActionState {
    const started = this.probing.get(r.id);
    const reading = this.o.gpus.health(r.gpuUuid);
    if (!started) {
      this.probing.set(r.id, { startedAt: now, baseline: reading.eccUncorrected });
      if ((r.probeSeconds ?? 0) > 0) return { ...base, state: 'running', reason: `watching for ${r.probeSeconds} s` };
    }
    const p = started ?? { startedAt: now, baseline: reading.eccUncorrected };
    if (now - p.startedAt < (r.probeSeconds ?? 0) * 1000)
      return { ...base, state: 'running', reason: `watching for ${r.probeSeconds} s` };
    // The window is over: DCGM's diagnostic, where asked, runs now, and the probe ends when it has a verdict.
    if (r.diag !== undefined && !p.diag?.verdict) {
      if (!p.diag) this.startDiag(r.id, p, index, r.diag);
      if (!p.diag?.verdict) return { ...base, state: 'running', reason: `DCGM diagnostic level ${r.diag} running` };
    }
    this.probing.delete(r.id);
    const probe: GpuProbe = {
      nvmlAnswers: reading.nvmlAnswers,
      recoveryAction: reading.recoveryAction,
      remapPending: reading.remapPending,
      remapFailed: reading.remapFailed,
      eccUncorrectedDelta: Math.max(0, reading.eccUncorrected - p.baseline),
      xidsDuringProbe: this.o.xids(r.gpuUuid, p.startedAt).slice(0, 64),
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
}
