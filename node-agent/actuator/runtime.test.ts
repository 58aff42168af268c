/**
 * The actuator in the agent process (`GPU_ACTIONS=true`): the real runtime loops on the mock NVML,
 * its Node read from a Kubernetes API (the simulated cluster through @kubernetes/client-node), the
 * fence file in a temp dir, `nvidia-smi` a stand-in script. Waits on observable state, never on time.
 */
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { afterAll, describe, expect, it } from 'vitest';
import type { CliIo } from '../../events/cli-kit/command.ts';
import { GPU_ACTION_RESULTS_ANNOTATION, GPU_ACTIONS_ANNOTATION } from '../../events/index.ts';
import { buildMockNvml, MOCK_NVML_SCENARIOS } from '../../infra/local/mock-nvml/build.ts';
import { startKubeSim, wallClock, type KubeSim } from '../../infra/local/kube/index.ts';
import { loadKubeConfig } from '../../functions/adapters/kube/config.ts';
import { runAgent } from '../agent-runtime.ts';
import { loadAgentConfig } from '../config.ts';
import { loadMockNvmlControls } from '../nvml/mock-controls.ts';
import { fakeProcRoot } from '../../test/support/agent-fixture.ts';
import { nvidiaSmiReset } from './ports.ts';

const dir = mkdtempSync(join(tmpdir(), 'gr-actuator-'));
let sim: KubeSim | undefined;
afterAll(async () => {
  await sim?.close();
  rmSync(dir, { recursive: true, force: true });
});

function script(name: string, body: string): string {
  const path = join(dir, name);
  writeFileSync(path, `#!/bin/sh\n${body}\n`);
  chmodSync(path, 0o755);
  return path;
}

describe('nvidiaSmiReset', () => {
  it('passes the UUID to nvidia-smi --gpu-reset and reports its own words when it fails', async () => {
    const ok = script('smi-ok', 'echo "$@" > "$(dirname "$0")/smi-args"; exit 0');
    expect(await nvidiaSmiReset(ok)('GPU-1', 0)).toEqual({ ok: true });
    expect(readFileSync(join(dir, 'smi-args'), 'utf8').trim()).toBe('--gpu-reset -i GPU-1');
    const busy = script(
      'smi-busy',
      'echo "GPU 00000000:10:00.0 is currently in use by another process." >&2; exit 255',
    );
    expect(await nvidiaSmiReset(busy)('GPU-1', 0)).toEqual({
      ok: false,
      reason: `${busy} --gpu-reset exited 255: GPU 00000000:10:00.0 is currently in use by another process.`,
    });
    expect(await nvidiaSmiReset(join(dir, 'absent'))('GPU-1', 0)).toMatchObject({
      ok: false,
      reason: expect.stringContaining('ENOENT'),
    });
  });

  it('does not block the event loop while the reset runs, and bounds it', async () => {
    const slow = script('smi-slow', 'sleep 0.3; exit 0');
    let ticks = 0;
    const timer = setInterval(() => ticks++, 10);
    const r = await nvidiaSmiReset(slow)('GPU-1', 0);
    clearInterval(timer);
    expect(r).toEqual({ ok: true });
    // A blocking spawn lets no timer fire before the await resumes: 0 ticks.
    expect(ticks).toBeGreaterThan(0);
    expect(await nvidiaSmiReset(script('smi-hang', 'sleep 5'), 200)('GPU-1', 0)).toMatchObject({
      ok: false,
      reason: expect.stringContaining('timed out after 200 ms'),
    });
  });
});

describe('gpu-reflex agent with GPU_ACTIONS=true', () => {
  it('fences a GPU its Node asks for and answers in the Node annotation and as an event', async () => {
    sim = await startKubeSim({
      fleet: {
        nodes: [{ name: 'gpu-node', count: 1, allocatable: { cpu: '8', memory: '64Gi', 'nvidia.com/gpu': '8' } }],
      },
      clock: wallClock,
    });
    const kubeconfig = join(dir, 'kubeconfig');
    sim.writeKubeconfig(kubeconfig);
    const library = await buildMockNvml();
    process.env.MOCK_NVML_QUIET = '1';
    const mock = loadMockNvmlControls(library);
    mock.setScenario(join(MOCK_NVML_SCENARIOS, 'dgx-a100-8x.json'));
    mock.setManualClock(false);
    const fenceFile = join(dir, 'etc/nvidia-device-plugin/unhealthyDevices.json');
    const config = loadAgentConfig({
      NODE_NAME: 'gpu-node-0',
      NVML_LIBRARY_PATH: library,
      HTTP_PORT: '0',
      KMSG_PATH: join(dir, 'kmsg'),
      PROC_ROOT: await fakeProcRoot([]),
      SAMPLE_INTERVAL_MS: '60000',
      GPU_ACTIONS: 'true',
      GPU_ACTIONS_INTERVAL_MS: '50',
      FENCE_FILE: fenceFile,
      KUBECONFIG: kubeconfig,
      NVIDIA_SMI: join(dir, 'absent'),
    });
    writeFileSync(join(dir, 'kmsg'), '');
    const core = loadKubeConfig({ kubeconfigPath: kubeconfig }).makeApiClient(CoreV1Api);
    // The UUID of the mock's GPU 3, as the functions would take it from the inventory.
    const uuid = JSON.parse(readFileSync(join(MOCK_NVML_SCENARIOS, 'dgx-a100-8x.json'), 'utf8')).gpus[3].uuid as string;
    const request = {
      id: 'fence.test0001',
      action: 'fence',
      gpuUuid: uuid,
      incident: 'gpu-node-0/x/xid-95',
      requestedAt: new Date().toISOString(),
      timeoutSeconds: 600,
    };
    await core.patchNode(
      {
        name: 'gpu-node-0',
        body: { metadata: { annotations: { [GPU_ACTIONS_ANNOTATION]: JSON.stringify([request]) } } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );

    const printed: { detailType: string; detail: Record<string, unknown> }[] = [];
    const logs: string[] = [];
    let answered = () => {};
    const done = new Promise<void>((resolve) => (answered = resolve));
    const io: CliIo = {
      out: (line) => {
        const e = JSON.parse(line) as { detailType: string; detail: Record<string, unknown> };
        printed.push(e);
        if (e.detailType === 'GPU Action Result') answered();
      },
      err: (line) => logs.push(line),
    };
    const stop = new AbortController();
    // --dry-run prints events instead of publishing; the actuator then does nothing to a GPU or file.
    const exit = runAgent({ config, io, stop: stop.signal, print: true, env: { UV_THREADPOOL_SIZE: '8' } });
    await Promise.race([
      done,
      exit.then((code) => Promise.reject(new Error(`agent exited ${code}: ${logs.join('\n')}`))),
    ]);
    stop.abort();
    expect(await exit).toBe(0);
    const result = printed.find((e) => e.detailType === 'GPU Action Result')!.detail;
    expect(result).toMatchObject({
      node: 'gpu-node-0',
      requestId: 'fence.test0001',
      action: 'fence',
      state: 'done',
      dryRun: true,
    });
    expect(String(result.reason)).toMatch(/^dry run/);
    expect(printed.filter((e) => e.detailType === 'GPU Action Result')).toHaveLength(1);
    // dry run: neither the file nor the Node was written
    expect(() => readFileSync(fenceFile)).toThrow();
    const node = await core.readNode({ name: 'gpu-node-0' });
    expect(node.metadata?.annotations?.[GPU_ACTION_RESULTS_ANNOTATION]).toBeUndefined();
  }, 60_000);
});
