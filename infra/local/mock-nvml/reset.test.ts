import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Nvml } from '../../../node-agent/nvml/nvml.ts';
import { MOCK_NVIDIA_SMI } from '../agent-process.ts';
import { oneGpu, openMockNvml } from '../../../test/support/mock-nvml.ts';

let nvml: Nvml | undefined;
afterEach(() => {
  nvml?.close();
  nvml = undefined;
});

const UUID = 'GPU-00000000-1111-2222-3333-444444444444';
const faulty = {
  ecc: { volatileUncorrected: 3, aggregateUncorrected: 3 },
  recoveryAction: 2,
  remappedRows: { pending: true },
};

/** Runs the mock nvidia-smi while this process keeps calling NVML (as an agent does). */
function smi(
  scenarioPath: string,
  args: string[],
  poll: () => void,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const timer = setInterval(poll, 5);
  return new Promise((done) => {
    execFile(
      process.execPath,
      [MOCK_NVIDIA_SMI, ...args],
      { env: { ...process.env, MOCK_NVML_SCENARIO: scenarioPath, MOCK_NVIDIA_SMI_TIMEOUT_MS: '10000' } },
      (err, stdout, stderr) => {
        clearInterval(timer);
        done({ code: err ? Number((err as { code?: number }).code) : 0, stdout, stderr });
      },
    );
  });
}

describe('mock NVML reset', () => {
  it('refuses a held GPU, clears what a reset clears, and fails for good after resetFails', async () => {
    const s = await openMockNvml(oneGpu({ ...faulty, processes: [{ pid: 7, usedMiB: 10 }] }));
    nvml = s.nvml;
    const d = nvml.device(0);
    expect(s.mock.resetGpu(0)).toBe(19);
    expect(s.mock.lastError()).toContain('in use by 1 process');
    expect(d.ecc()?.volatileUncorrected).toBe(3);
    nvml.close();
    const t = await openMockNvml(oneGpu(faulty));
    nvml = t.nvml;
    const e = nvml.device(0);
    expect(e.recoveryAction()?.code).toBe(2);
    expect(t.mock.resetGpu(0)).toBe(0);
    expect(e.ecc()).toMatchObject({ volatileUncorrected: 0, aggregateUncorrected: 3 });
    expect(e.recoveryAction()?.code).toBe(0);
    expect(e.remappedRows()?.pending).toBe(false);
    expect(t.mock.injectFault({ gpu: 0, kind: 'resetFails' })).toBe(0);
    expect(t.mock.resetGpu(0)).toBe(999);
    expect(t.mock.lastError()).toContain('did not come back');
  });
});

describe('mock NVML reset on a board that does not reset one GPU alone', () => {
  it.each([
    ['none', 'NVSwitch system'],
    ['all', 'every NVLink-connected GPU together'],
  ])(
    'answers NVML_ERROR_NOT_SUPPORTED for resetScope %s, even on an idle GPU, and clears nothing',
    async (scope, words) => {
      const s = await openMockNvml(oneGpu({ ...faulty, resetScope: scope }));
      nvml = s.nvml;
      expect(s.mock.resetGpu(0)).toBe(3);
      expect(s.mock.lastError()).toContain(words);
      expect(nvml.device(0).recoveryAction()?.code).toBe(2);
    },
  );

  it('refuses a reset while another client (the clientsFile) holds the GPUs, and resets once it is empty', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mock-clients-'));
    const clientsFile = join(dir, 'clients.json');
    writeFileSync(clientsFile, JSON.stringify({ holders: ['gpu-operator/nvidia-dcgm-exporter-x'] }));
    const s = await openMockNvml(oneGpu(faulty, { clientsFile }));
    nvml = s.nvml;
    expect(s.mock.resetGpu(0)).toBe(19);
    expect(s.mock.lastError()).toContain('in use by another client (1: gpu-operator/nvidia-dcgm-exporter-x');
    writeFileSync(clientsFile, JSON.stringify({ holders: [] }));
    expect(s.mock.resetGpu(0)).toBe(0);
  });

  it('refuses a scenario with an unknown resetScope', async () => {
    await expect(openMockNvml(oneGpu({ resetScope: 'sometimes' }))).rejects.toThrow(/nvmlInit/);
  });
});

describe('mock nvidia-smi', () => {
  it("resets a GPU through the controlDir of the library another process loaded, in nvidia-smi's words", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mock-smi-'));
    const controlDir = join(dir, 'control');
    mkdirSync(controlDir);
    const path = join(dir, 'scenario.json');
    const s = await openMockNvml(oneGpu(faulty, { controlDir }));
    nvml = s.nvml;
    // The test wrote the scenario to a temp file; the mock nvidia-smi reads the same JSON.
    writeFileSync(path, JSON.stringify(oneGpu(faulty, { controlDir })));
    const d = nvml.device(0);
    const poll = () => void d.temperatureC();
    const ok = await smi(path, ['--gpu-reset', '-i', UUID], poll);
    expect(ok).toMatchObject({ code: 0, stdout: 'GPU 00000000:3B:00.0 was successfully reset.\n' });
    expect(d.ecc()?.volatileUncorrected).toBe(0);
    expect(d.recoveryAction()?.code).toBe(0);
    // Nothing is left behind in the control directory.
    expect(readdirSync(controlDir)).toEqual([]);

    s.mock.injectFault({ gpu: 0, kind: 'resetFails' });
    const failed = await smi(path, ['--gpu-reset', '-i', UUID], poll);
    expect(failed.code).toBe(255);
    expect(failed.stderr).toContain('GPU 00000000:3B:00.0: Unknown Error (GPU 0 did not come back from its reset)');
    // The client's failure is not the agent's last error.
    expect(s.mock.lastError()).toBe('');

    const unknown = await smi(path, ['--gpu-reset', '-i', 'GPU-nope'], poll);
    expect(unknown).toMatchObject({ code: 255, stderr: expect.stringContaining('Not Found') });
    expect((await smi(path, ['-q'], poll)).code).toBe(2);
  });

  it('keeps persistence mode per GPU beside the control directory: on by default, -pm 0|1 sets it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mock-smi-'));
    const controlDir = join(dir, 'control');
    mkdirSync(controlDir);
    const path = join(dir, 'scenario.json');
    writeFileSync(path, JSON.stringify(oneGpu({}, { controlDir })));
    const query = ['-i', UUID, '--query-gpu=persistence_mode', '--format=csv,noheader'];
    const none = () => undefined;
    expect(await smi(path, query, none)).toMatchObject({ code: 0, stdout: 'Enabled\n' });
    expect(await smi(path, ['-i', UUID, '-pm', '0'], none)).toMatchObject({
      code: 0,
      stdout: 'Disabled persistence mode for GPU 00000000:3B:00.0.\n',
    });
    expect(await smi(path, query, none)).toMatchObject({ stdout: 'Disabled\n' });
    expect((await smi(path, ['-i', UUID, '-pm', '7'], none)).code).toBe(2);
    expect((await smi(path, ['-i', 'GPU-nope', '-pm', '1'], none)).code).toBe(6);
  });

  it('gives up, exit 255, when no agent answers', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mock-smi-'));
    const controlDir = join(dir, 'control');
    mkdirSync(controlDir);
    const path = join(dir, 'scenario.json');
    writeFileSync(path, JSON.stringify(oneGpu({}, { controlDir })));
    const r = await new Promise<{ code: number; stderr: string }>((done) =>
      execFile(
        process.execPath,
        [MOCK_NVIDIA_SMI, '--gpu-reset', '-i', UUID],
        { env: { ...process.env, MOCK_NVML_SCENARIO: path, MOCK_NVIDIA_SMI_TIMEOUT_MS: '100' } },
        (err, _o, stderr) => done({ code: err ? Number((err as { code?: number }).code) : 0, stderr }),
      ),
    );
    expect(r.code).toBe(255);
    expect(r.stderr).toContain('no answer from the mock NVML library');
    expect(readdirSync(controlDir)).toEqual([]);
  });
});
