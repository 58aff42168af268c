/**
 * What the agent compares once, at start, with what it remembers beside its spool: the GPUs this node
 * has had (`gpu-missing` for one NVML no longer lists) and how many it should have (`gpu-count`,
 * EXPECTED_GPUS); and the small state files it keeps (replaced whole, never half a file).
 */
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import type { GpuRef } from '../events/common.ts';
import type { EccMemory, HealthEvaluator, HealthEvent } from './collectors/health.ts';
import type { PublisherLog } from './publisher/types.ts';
import type { NvmlSource } from './sources/nvml-source.ts';

/** The GPUs NVML lists at start, and the ones it could not name. */
type StartSource = Pick<NvmlSource, 'gpus' | 'unnamed'>;

/** A small state file replaced whole: written beside it, renamed over it (never half a file). */
export function replaceFile(path: string, text: string): void {
  writeFileSync(`${path}.tmp`, text);
  renameSync(`${path}.tmp`, path);
}

export function readEccState(path: string): EccMemory {
  try {
    const raw = JSON.parse(readFileSync(path, 'utf8')) as unknown;
    return raw && typeof raw === 'object' && !Array.isArray(raw) ? (raw as EccMemory) : {};
  } catch {
    return {}; // first start, or unreadable: counting starts over
  }
}

/**
 * The health evaluator's ECC counters kept across restarts (ECC_STATE_PATH; none: not kept): restored at start,
 * written when they moved (replaced whole: never half a file).
 */
export class EccFile {
  private saved: string;

  constructor(
    private readonly path: string | undefined,
    private readonly evaluator: HealthEvaluator,
    private readonly log: PublisherLog,
  ) {
    if (path) evaluator.restoreEcc(readEccState(path));
    this.saved = JSON.stringify(evaluator.eccMemory());
  }

  save(): void {
    const now = JSON.stringify(this.evaluator.eccMemory());
    if (!this.path || now === this.saved) return;
    try {
      replaceFile(this.path, now);
      this.saved = now;
    } catch (err) {
      this.log.warn('ECC counters not saved', { path: this.path, error: String(err) });
    }
  }
}

/**
 * GPUs remembered from earlier runs that NVML does not list now fire `gpu-missing`; ones that were
 * missing and are back resolve it. The memory keeps every GPU ever seen here (a GPU removed on
 * purpose: delete the file). No file is a first start; a file there that cannot be read or is not
 * this shape is unknown, never a first start: read as one, it was written over with today's GPUs and
 * a GPU gone since was never reported. It is kept as it is, nothing is compared, and the log says why.
 */
export function compareGpuMemory(path: string, source: StartSource, log: PublisherLog): HealthEvent[] {
  let memory: { gpus: GpuRef[]; missing: string[] } = { gpus: [], missing: [] };
  let text: string | undefined;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') return gpuMemoryUnread(path, String(err), log);
    // first start on this node: nothing to compare with
  }
  if (text !== undefined) {
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch (err) {
      return gpuMemoryUnread(path, String(err), log);
    }
    const r = raw as { gpus?: unknown; missing?: unknown } | null;
    const ref = (g: unknown) =>
      !!g && typeof g === 'object' && typeof (g as GpuRef).uuid === 'string' && typeof (g as GpuRef).index === 'number';
    if (
      !r ||
      typeof r !== 'object' ||
      !Array.isArray(r.gpus) ||
      !r.gpus.every(ref) ||
      (r.missing !== undefined && (!Array.isArray(r.missing) || !r.missing.every((u) => typeof u === 'string')))
    )
      return gpuMemoryUnread(path, 'not {"gpus": [{index, uuid, …}], "missing": [uuid]}', log);
    memory = { gpus: r.gpus as GpuRef[], missing: (r.missing as string[] | undefined) ?? [] };
  }
  const now = new Set(source.gpus.map((g) => g.uuid));
  const out: HealthEvent[] = [];
  const missing: string[] = [];
  for (const g of memory.gpus) {
    if (now.has(g.uuid)) {
      if (memory.missing.includes(g.uuid))
        out.push({
          gpu: g,
          condition: 'gpu-missing',
          state: 'resolved',
          severity: 'info',
          message: `GPU ${g.uuid} is listed by NVML again`,
        });
      continue;
    }
    missing.push(g.uuid);
    if (!memory.missing.includes(g.uuid)) {
      out.push({
        gpu: g,
        condition: 'gpu-missing',
        state: 'firing',
        severity: 'critical',
        message:
          `GPU ${g.index} (${g.uuid}, PCI ${g.pciBusId}) was on this node and NVML no longer lists ` +
          `it: ${source.gpus.length} GPUs now, ${memory.gpus.length} before`,
        value: source.gpus.length,
        threshold: memory.gpus.length,
        unit: 'GPUs',
      });
    }
  }
  const known = new Set(memory.gpus.map((g) => g.uuid));
  const gpus = [
    ...memory.gpus,
    ...source.gpus
      .filter((g) => !known.has(g.uuid))
      .map((g) => ({ index: g.index, uuid: g.uuid, pciBusId: g.pciBusId, name: g.name })),
  ];
  try {
    replaceFile(path, JSON.stringify({ gpus, missing }));
  } catch (err) {
    log.warn('GPU memory not saved', { path, error: String(err) });
  }
  return out;
}

/** The GPU memory there but not readable: kept as it is (a person mends or deletes it), and said. */
function gpuMemoryUnread(path: string, why: string, log: PublisherLog): HealthEvent[] {
  log.warn(
    'GPU memory not readable: GPUs gone since an earlier run are not checked at this start (gpu-missing); ' +
      'the file is kept as it is: mend it, or delete it to start remembering from the GPUs listed now',
    { path, error: why },
  );
  return [];
}

/**
 * NVML's GPU count against EXPECTED_GPUS. Firing each start while short (the functions deduplicate
 * it as one open incident); resolved at a start with enough, when the last start was short (kept
 * beside the GPU memory, or in the process only without it).
 */
export function compareGpuCount(
  expected: number | undefined,
  gpuMemoryPath: string | undefined,
  source: StartSource,
  log: PublisherLog,
): HealthEvent[] {
  const path = gpuMemoryPath ? `${gpuMemoryPath}.count` : undefined;
  let wasShort = false;
  try {
    wasShort = path !== undefined && readFileSync(path, 'utf8').trim() === 'short';
  } catch {
    // never short before
  }
  const seen = source.gpus.length + source.unnamed.length;
  const short = expected !== undefined && seen < expected;
  if (path && short !== wasShort) {
    try {
      replaceFile(path, short ? 'short' : 'ok');
    } catch (err) {
      log.warn('GPU count state not saved', { path, error: String(err) });
    }
  }
  if (short)
    return [
      {
        condition: 'gpu-count',
        state: 'firing',
        severity: 'critical',
        message:
          `NVML lists ${seen} GPU${seen === 1 ? '' : 's'}; this node should have ${expected} ` +
          `(EXPECTED_GPUS): ${expected! - seen} missing since before the agent started`,
        value: seen,
        threshold: expected,
        unit: 'GPUs',
      },
    ];
  return wasShort
    ? [
        {
          condition: 'gpu-count',
          state: 'resolved',
          severity: 'info',
          message: `NVML lists ${seen} GPUs again, as this node should have`,
          value: seen,
          unit: 'GPUs',
        },
      ]
    : [];
}
