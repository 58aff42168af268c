/**
 * `gpu-reflex agent` as a process: the real entry point (bin/gpu-reflex.js through tsx), the real
 * NVML binding, the mock library. The test waits for the child to exit; it never sleeps.
 */
import { execFile } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { UsageError } from '../../events/cli-kit/command.ts';
import { agentCommand } from './agent.ts';
import { buildMockNvml, MOCK_NVML_SCENARIOS } from '../../infra/local/mock-nvml/build.ts';
import { validateEvent } from '../../events/validate.ts';
import { fakeProcRoot, podUidOf } from '../../test/support/agent-fixture.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

function agent(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    // A clean environment: only what the agent is given, plus PATH for node itself.
    const child = execFile(
      process.execPath,
      ['bin/gpu-reflex.js', 'agent', ...args],
      { cwd: ROOT, env: { PATH: process.env.PATH ?? '', NODE_NAME: 'gpu-node-1', ...env } },
      (err, stdout, stderr) => {
        resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
      },
    );
    child.stdin?.end();
  });
}

describe('gpu-reflex agent (process)', () => {
  it('exits 3 with the exact message when the NVML library is missing', async () => {
    const missing = join(await mkdtemp(join(tmpdir(), 'gr-nonvml-')), 'libnvidia-ml.so.1');
    const r = await agent(['--once', '--dry-run'], { NVML_LIBRARY_PATH: missing });
    expect(r.code).toBe(3);
    expect(r.stderr.split('\n')).toContain(`NVML not found at ${missing}: is the NVIDIA driver installed?`);
    expect(r.stdout).toBe('');
  });

  it('prints the inventory as a valid event on --once --dry-run with the mock library', async () => {
    const library = await buildMockNvml();
    const procRoot = await fakeProcRoot([2201, 2202, 2301]);
    const r = await agent(['--once', '--dry-run'], {
      NVML_LIBRARY_PATH: library,
      MOCK_NVML_SCENARIO: join(MOCK_NVML_SCENARIOS, 'h100-mig.json'),
      PROC_ROOT: procRoot,
      SPOOL_PATH: join(procRoot, 'never-used.jsonl'),
    });
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout
      .trim()
      .split('\n')
      .map(
        (l) => JSON.parse(l) as { source: string; detailType: string; time: string; detail: Record<string, unknown> },
      );
    expect(lines.map((l) => l.detailType)).toEqual(['GPU Inventory']);
    for (const l of lines) {
      const envelope = {
        version: '0',
        id: 'dry-run',
        'detail-type': l.detailType,
        source: l.source,
        account: '000000000000',
        time: l.time.replace(/\.\d+Z$/, 'Z'),
        region: 'us-east-1',
        resources: [],
        detail: l.detail,
      };
      expect(validateEvent(envelope)).toMatchObject({ ok: true });
    }
    const gpus = lines[0]!.detail.gpus as {
      migMode: string;
      migDevices: unknown[];
      processes: { pid: number; podUid?: string }[];
    }[];
    expect(gpus.map((g) => [g.migMode, g.migDevices.length])).toEqual([
      ['enabled', 7],
      ['enabled', 3],
    ]);
    expect(gpus[1]!.processes).toEqual([expect.objectContaining({ pid: 2301, podUid: podUidOf(2301) })]);
  });

  it('exits 2 naming the variable when the environment is bad', async () => {
    const r = await agent(['--once'], { SAMPLE_INTERVAL_MS: 'soon' });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('SAMPLE_INTERVAL_MS');
  });
});

describe('agentCommand.run (in-process)', () => {
  afterEach(() => vi.unstubAllEnvs());

  it('refuses unknown options and positional arguments as usage errors', async () => {
    const io = { out: () => {}, err: () => {} };
    await expect(agentCommand.run(['--bogus'], io)).rejects.toThrow(UsageError);
    await expect(agentCommand.run(['now'], io)).rejects.toThrow(UsageError);
  });

  it('--once --dry-run prints one JSON line per event and logs to stderr only', async () => {
    vi.stubEnv('NODE_NAME', 'gpu-node-1');
    vi.stubEnv('NVML_LIBRARY_PATH', await buildMockNvml());
    vi.stubEnv('MOCK_NVML_SCENARIO', join(MOCK_NVML_SCENARIOS, 't4-node.json'));
    vi.stubEnv('MOCK_NVML_QUIET', '1');
    vi.stubEnv('PROC_ROOT', await fakeProcRoot([]));
    const out: string[] = [];
    const err: string[] = [];
    expect(await agentCommand.run(['--once', '--dry-run'], { out: (l) => out.push(l), err: (l) => err.push(l) })).toBe(
      0,
    );
    expect(out.map((l) => (JSON.parse(l) as { detailType: string }).detailType)).toEqual(['GPU Inventory']);
    for (const l of err) expect(JSON.parse(l)).toHaveProperty('level');
  });
});
