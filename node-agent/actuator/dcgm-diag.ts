/**
 * DCGM's diagnostic, asked by a probe's `diag` (events/catalog/gpu-action.ts): `dcgmi diag -r <level> -i <index> -j`
 * on the node, its JSON read for this GPU. NVIDIA DCGM user guide, "DCGM Diagnostics" (run levels 1–3, `-j` for
 * JSON); the JSON's shape as DCGM 4 writes it, NVIDIA/DCGM testing/python3/dcgm_diag_schema.json: `"DCGM Diagnostic"
 * → test_categories[] → tests[] { name, results[] { entity_group, entity_id, status }, test_summary }`, with
 * `runtime_error` when the run itself failed (DCGM 3 names the top object "DCGM GPU Diagnostic": read too).
 *
 * The verdict: `pass` when at least one test result for the GPU passed and none failed or warned (a skipped or
 * not-run test says nothing either way); `fail` when one did (named); `unavailable` — never a pass — when dcgmi is
 * not installed, timed out, reported a runtime error, or printed no JSON of this shape (unknown is never healthy).
 * dcgmi exits non-zero when a test fails (dcgmi/Diag.cpp returns the failure result): the JSON decides, not the code.
 */
import { execFile, spawnSync } from 'node:child_process';
import type { DcgmDiagLevel, GpuDiag } from '../../events/index.ts';

/** One dcgmi run: its exit code and output, or `missing` when there is no dcgmi to run. */
export type DcgmiRun = (
  args: readonly string[],
  timeoutMs: number,
) => Promise<{ exitCode: number; stdout: string; stderr: string } | { missing: true } | { timedOut: true }>;

/**
 * How long each run level may take before the agent gives up on it: NVIDIA's durations for r1 (seconds), r2 (about
 * two minutes) and r3 (about half an hour), with room to spare (the functions allow as much more for the answer).
 */
export const DIAG_TIMEOUT_MS: Record<DcgmDiagLevel, number> = { 1: 4 * 60_000, 2: 12 * 60_000, 3: 50 * 60_000 };

/** `dcgmi` as a process (`path`: the binary, found on PATH by default). */
export function dcgmiProcess(path = 'dcgmi', env?: NodeJS.ProcessEnv): DcgmiRun {
  return (args, timeoutMs) =>
    new Promise((resolve) => {
      execFile(
        path,
        [...args],
        { timeout: timeoutMs, maxBuffer: 8 * 1024 * 1024, encoding: 'utf8', ...(env ? { env } : {}) },
        (err, stdout, stderr) => {
          const e = err as (NodeJS.ErrnoException & { killed?: boolean; code?: unknown }) | null;
          if (e?.code === 'ENOENT') return resolve({ missing: true });
          if (e?.killed) return resolve({ timedOut: true });
          resolve({ exitCode: typeof e?.code === 'number' ? e.code : e ? 1 : 0, stdout, stderr });
        },
      );
    });
}

/**
 * `dcgmi` run to its end before the promise is made (the embedded stack's agents: its verdict is then there at
 * the very next tick of the virtual clock, whatever the machine's load, so a scenario's timeline is the same on
 * every run).
 */
export function dcgmiProcessSync(path: string, env?: NodeJS.ProcessEnv): DcgmiRun {
  return (args, timeoutMs) => {
    const r = spawnSync(path, [...args], { timeout: timeoutMs, encoding: 'utf8', ...(env ? { env } : {}) });
    const e = r.error as NodeJS.ErrnoException | undefined;
    if (e?.code === 'ENOENT') return Promise.resolve({ missing: true });
    if (e?.code === 'ETIMEDOUT') return Promise.resolve({ timedOut: true });
    return Promise.resolve({ exitCode: r.status ?? 1, stdout: r.stdout ?? '', stderr: r.stderr ?? '' });
  };
}

/** Runs the diagnostic on the GPU at `index` and reads its verdict. */
export async function runDcgmDiag(run: DcgmiRun, index: number, level: DcgmDiagLevel): Promise<GpuDiag> {
  const out = await run(['diag', '-r', String(level), '-i', String(index), '-j'], DIAG_TIMEOUT_MS[level]);
  if ('missing' in out) return unavailable(level, 'dcgmi is not installed on this node (DCGM is not running here)');
  if ('timedOut' in out)
    return unavailable(level, `dcgmi diag -r ${level} did not finish within ${DIAG_TIMEOUT_MS[level] / 60_000} min`);
  return readDiagJson(out.stdout, index, level, out.stderr || `dcgmi exited ${out.exitCode}`);
}

const unavailable = (level: DcgmDiagLevel, reason: string): GpuDiag => ({
  level,
  result: 'unavailable',
  failed: [],
  reason: reason.slice(0, 512),
});

interface DiagResult {
  entity_group?: unknown;
  entity_id?: unknown;
  status?: unknown;
}

/** The verdict in dcgmi's JSON for the GPU at `index` (see the file comment). `otherwise`: why, if it is not JSON. */
export function readDiagJson(text: string, index: number, level: DcgmDiagLevel, otherwise = 'no output'): GpuDiag {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return unavailable(level, `dcgmi printed no JSON: ${(text.trim() || otherwise).split('\n')[0]}`);
  }
  const top =
    (json as Record<string, unknown> | null)?.['DCGM Diagnostic'] ??
    (json as Record<string, unknown> | null)?.['DCGM GPU Diagnostic'];
  if (typeof top !== 'object' || top === null) return unavailable(level, 'dcgmi JSON has no "DCGM Diagnostic" object');
  const diag = top as { runtime_error?: unknown; test_categories?: unknown };
  if (typeof diag.runtime_error === 'string' && diag.runtime_error !== '')
    return unavailable(level, `dcgmi: ${diag.runtime_error}`);
  const failed: string[] = [];
  let passed = 0;
  const categories = Array.isArray(diag.test_categories) ? diag.test_categories : [];
  for (const c of categories as { tests?: unknown }[]) {
    for (const t of (Array.isArray(c?.tests) ? c.tests : []) as { name?: unknown; results?: unknown }[]) {
      const name = typeof t?.name === 'string' ? t.name : 'unnamed test';
      for (const r of (Array.isArray(t?.results) ? t.results : []) as DiagResult[]) {
        // A result of another GPU (or of the CPU) is not this GPU's evidence; one with no entity is the run's.
        const gpu = r?.entity_group === undefined || r.entity_group === 'GPU';
        if (!gpu || (r.entity_id !== undefined && r.entity_id !== index)) continue;
        const status = typeof r.status === 'string' ? r.status.trim().toLowerCase() : '';
        if (status === 'pass') passed++;
        else if (status === 'fail' || status === 'warn') failed.push(name);
      }
    }
  }
  if (failed.length > 0)
    return { level, result: 'fail', failed: [...new Set(failed)].slice(0, 32).map((f) => f.slice(0, 128)) };
  if (passed === 0) return unavailable(level, `dcgmi reported no test result for GPU ${index}`);
  return { level, result: 'pass', failed: [] };
}
