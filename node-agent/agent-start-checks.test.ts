/**
 * The GPU memory beside the spool (`<SPOOL_PATH>.gpus.json`): a file there that cannot be read is unknown,
 * never a first start — read as one, it was written over with today's GPUs, and a GPU gone since was never reported.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { GpuRef } from '../events/common.ts';
import { compareGpuMemory } from './agent-start-checks.ts';

const gpu = (i: number): GpuRef => ({
  index: i,
  uuid: `GPU-${i}${i}${i}${i}${i}${i}${i}${i}-0000-4000-8000-000000000000`,
  pciBusId: `00000000:0${i}:00.0`,
  name: 'NVIDIA A100-SXM4-80GB',
});
const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));

function rig() {
  const dir = mkdtempSync(join(tmpdir(), 'gpu-memory-'));
  dirs.push(dir);
  const warned: string[] = [];
  const log = { info() {}, warn: (m: string) => void warned.push(m), error() {} };
  return { path: join(dir, 'spool.jsonl.gpus.json'), warned, log };
}

describe('the GPU memory at start', () => {
  it('remembers the GPUs on a first start (no file), and reports one missing at the next', () => {
    const r = rig();
    expect(compareGpuMemory(r.path, { gpus: [gpu(0), gpu(1)], unnamed: [] }, r.log)).toEqual([]);
    const out = compareGpuMemory(r.path, { gpus: [gpu(0)], unnamed: [] }, r.log);
    expect(out.map((e) => [e.condition, e.state, e.gpu?.uuid])).toEqual([['gpu-missing', 'firing', gpu(1).uuid]]);
    expect(r.warned).toEqual([]);
  });

  it.each([
    ['cut short', (g: GpuRef[]) => JSON.stringify({ gpus: g, missing: [] }).slice(0, 40)],
    ['empty', () => ''],
    ['not its shape', (g: GpuRef[]) => JSON.stringify({ gpus: g.map((x) => x.uuid), missing: [] })],
  ])('keeps a file it cannot read (%s), says why, and never takes today as a first start', (_, text) => {
    const r = rig();
    const damaged = text([gpu(0), gpu(1)]);
    writeFileSync(r.path, damaged);
    expect(compareGpuMemory(r.path, { gpus: [gpu(0)], unnamed: [] }, r.log)).toEqual([]);
    expect(readFileSync(r.path, 'utf8')).toBe(damaged); // not written over with today's GPUs
    expect(r.warned).toHaveLength(1);
    expect(r.warned[0]).toContain('not readable');
    // Mended by hand: the GPU missing since is reported (it would have been lost had the file been rewritten).
    writeFileSync(r.path, JSON.stringify({ gpus: [gpu(0), gpu(1)], missing: [] }));
    const out = compareGpuMemory(r.path, { gpus: [gpu(0)], unnamed: [] }, r.log);
    expect(out.map((e) => [e.condition, e.state, e.gpu?.uuid])).toEqual([['gpu-missing', 'firing', gpu(1).uuid]]);
  });
});
