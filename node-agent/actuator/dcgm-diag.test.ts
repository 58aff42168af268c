import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { dcgmiProcess, readDiagJson, runDcgmDiag } from './dcgm-diag.ts';

/** dcgmi's JSON as DCGM 4 writes it (NVIDIA/DCGM testing/python3/dcgm_diag_schema.json): one entry per GPU result. */
function diagJson(results: { test: string; gpu: number; status: string }[], top = 'DCGM Diagnostic'): string {
  const tests = [...new Set(results.map((r) => r.test))].map((name) => ({
    name,
    results: results
      .filter((r) => r.test === name)
      .map((r) => ({ entity_group: 'GPU', entity_group_id: 1, entity_id: r.gpu, status: r.status })),
    test_summary: { status: results.some((r) => r.test === name && r.status === 'Fail') ? 'Fail' : 'Pass' },
  }));
  return JSON.stringify({
    [top]: { test_categories: [{ category: 'Hardware', tests }] },
    metadata: { version: '4.2.3' },
  });
}

describe("reading dcgmi diag's JSON for one GPU", () => {
  it('passes a GPU whose tests passed, skipped ones saying nothing', () => {
    const text = diagJson([
      { test: 'Memory', gpu: 0, status: 'Pass' },
      { test: 'PCIe', gpu: 0, status: 'Skip' },
      { test: 'Memory', gpu: 1, status: 'Fail' },
    ]);
    expect(readDiagJson(text, 0, 2)).toEqual({ level: 2, result: 'pass', failed: [] });
  });

  it('fails a GPU on a failed or warned test, naming each once', () => {
    const text = diagJson([
      { test: 'Memory', gpu: 1, status: 'Fail' },
      { test: 'Targeted Stress', gpu: 1, status: 'Warn' },
      { test: 'Memory', gpu: 1, status: 'Fail' },
      { test: 'PCIe', gpu: 1, status: 'Pass' },
    ]);
    expect(readDiagJson(text, 1, 3)).toEqual({ level: 3, result: 'fail', failed: ['Memory', 'Targeted Stress'] });
  });

  it("reads DCGM 3's top object the same way", () => {
    const text = diagJson([{ test: 'Denylist', gpu: 0, status: 'Pass' }], 'DCGM GPU Diagnostic');
    expect(readDiagJson(text, 0, 1).result).toBe('pass');
  });

  it.each([
    ['no JSON at all', 'Error: unable to establish a connection to the specified host: localhost', /printed no JSON/],
    ['a runtime error', JSON.stringify({ 'DCGM Diagnostic': { runtime_error: 'host engine down' } }), /host engine/],
    ['another shape', JSON.stringify({ something: 1 }), /no "DCGM Diagnostic"/],
    ['no result for this GPU', diagJson([{ test: 'Memory', gpu: 3, status: 'Pass' }]), /no test result for GPU 0/],
    ['only skipped tests', diagJson([{ test: 'Memory', gpu: 0, status: 'Skip' }]), /no test result for GPU 0/],
  ])('gives no verdict (unavailable, never a pass) on %s', (_what, text, why) => {
    const d = readDiagJson(text, 0, 2);
    expect(d.result).toBe('unavailable');
    expect(d.reason).toMatch(why);
  });
});

describe('running dcgmi', () => {
  const dir = mkdtempSync(join(tmpdir(), 'dcgmi-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('is unavailable where dcgmi is not installed', async () => {
    const d = await runDcgmDiag(dcgmiProcess(join(dir, 'no-such-dcgmi')), 0, 1);
    expect(d).toMatchObject({ result: 'unavailable', reason: expect.stringContaining('not installed') });
  });

  it('asks for the level, the GPU and JSON, and reads the output of a run that exits non-zero on a failure', async () => {
    const bin = join(dir, 'dcgmi');
    const out = diagJson([{ test: 'Memory', gpu: 2, status: 'Fail' }]);
    writeFileSync(bin, `#!/bin/sh\necho "$@" > ${join(dir, 'args')}\necho '${out}'\nexit 226\n`);
    chmodSync(bin, 0o755);
    const d = await runDcgmDiag(dcgmiProcess(bin), 2, 2);
    expect(d).toEqual({ level: 2, result: 'fail', failed: ['Memory'] });
    const { readFileSync } = await import('node:fs');
    expect(readFileSync(join(dir, 'args'), 'utf8').trim()).toBe('diag -r 2 -i 2 -j');
  });
});
