/**
 * The runtime in-process: real loops, the mock NVML on its real clock (event waits block in the
 * library, as on a driver), a kernel log file, HTTP on port 0. The test waits for the lines the
 * agent prints (promises resolved by its output), never for time to pass.
 */
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildMockNvml, MOCK_NVML_SCENARIOS } from '../infra/local/mock-nvml/build.ts';
import type { CliIo } from '../events/cli-kit/command.ts';
import { kmsgRecordBefore, runAgent, threadPoolWarning } from './agent-runtime.ts';
import { loadAgentConfig } from './config.ts';
import { loadMockNvmlControls } from './nvml/mock-controls.ts';
import { FakeClock } from './clock.ts';
import { fakeProcRoot, podUidOf } from '../test/support/agent-fixture.ts';

type Printed = { detailType: string; detail: Record<string, unknown> };

/** Captures output; `next(pred)` resolves with the first printed event (past or future) that matches. */
function capture() {
  const events: Printed[] = [];
  const logs: string[] = [];
  const waiters: { pred: (e: Printed) => boolean; resolve: (e: Printed) => void }[] = [];
  const io: CliIo = {
    out(line) {
      const e = JSON.parse(line) as Printed;
      events.push(e);
      for (const w of waiters.filter((x) => x.pred(e))) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(e);
      }
    },
    err: (line) => logs.push(line),
  };
  const next = (pred: (e: Printed) => boolean) =>
    new Promise<Printed>((resolve) => {
      const seen = events.find(pred);
      if (seen) resolve(seen);
      else waiters.push({ pred, resolve });
    });
  return { io, events, logs, next };
}

describe('runAgent', () => {
  it('publishes NVML and kernel-log XIDs, serves /healthz and /metrics, and flushes on stop', async () => {
    const library = await buildMockNvml();
    process.env.MOCK_NVML_QUIET = '1';
    const mock = loadMockNvmlControls(library);
    mock.setScenario(join(MOCK_NVML_SCENARIOS, 'dgx-a100-8x.json'));
    mock.setManualClock(false);
    const dir = await mkdtemp(join(tmpdir(), 'gr-runtime-'));
    const kmsg = join(dir, 'kern.log');
    await writeFile(
      kmsg,
      '[ 8123.000001] NVRM: Xid (PCI:0000:47:00): 31, pid=4102, name=python, Ch 00000008, intr 00000000\n',
    );
    // GPU 2's process (pid 4102) is a pod whose kubelet log directory names it.
    const podLogs = join(dir, 'pods');
    await mkdir(join(podLogs, `ml-training_trainer-2_${podUidOf(4102)}`, 'main'), { recursive: true });
    const config = loadAgentConfig({
      NODE_NAME: 'gpu-node-1',
      NVML_LIBRARY_PATH: library,
      HTTP_PORT: '0',
      KMSG_PATH: kmsg,
      PROC_ROOT: await fakeProcRoot([4102]),
      POD_LOG_DIR: podLogs,
      SAMPLE_INTERVAL_MS: '60000',
    });
    const { io, events, logs, next } = capture();
    const stop = new AbortController();
    let port = 0;
    let onReady = () => {};
    const ready = new Promise<void>((resolve) => (onReady = resolve));
    const exit = runAgent({
      config,
      io,
      stop: stop.signal,
      print: true,
      env: { UV_THREADPOOL_SIZE: '8' },
      onReady: (r) => {
        port = r.httpPort;
        onReady();
      },
    });
    // An early exit fails the test with the agent's logs instead of a timeout.
    await Promise.race([
      ready,
      exit.then((code) => Promise.reject(new Error(`agent exited ${code}: ${logs.join('\n')}`))),
    ]);

    await next((e) => e.detailType === 'GPU Inventory');
    const fromKmsg = await next((e) => e.detailType === 'GPU XID Error' && e.detail.via === 'kmsg');
    expect(fromKmsg.detail).toMatchObject({ xid: 31, pid: 4102, gpu: { index: 2 } });
    mock.injectXid(5, 79);
    const fromNvml = await next((e) => e.detailType === 'GPU XID Error' && e.detail.via === 'nvml');
    expect(fromNvml.detail).toMatchObject({ xid: 79, gpu: { index: 5 } });

    const health = await fetch(`http://127.0.0.1:${port}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({ status: 'ok', spooled: 0 });
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    // Per GPU and XID, dcgm-exporter's label keys: an XID alert fires per GPU.
    expect(metrics).toMatch(/^gpu_reflex_xids_total\{via="kmsg",gpu="2",UUID="GPU-[0-9a-f-]+",xid="31"\} 1$/m);
    expect(metrics).toMatch(/^gpu_reflex_xids_total\{via="nvml",gpu="5",UUID="GPU-[0-9a-f-]+",xid="79"\} 1$/m);
    expect(metrics).toMatch(/^# TYPE gpu_reflex_nvml_errors_total counter$/m);
    // The GPUs under dcgm-exporter's names, labelled with the node (dcgm.test.ts covers the rest).
    expect(metrics).toMatch(/^# TYPE DCGM_FI_DEV_GPU_UTIL gauge$/m);
    expect(metrics).toMatch(/^DCGM_FI_DEV_XID_ERRORS\{gpu="5",.*Hostname="gpu-node-1".*\} 79$/m);
    // Its pod named from POD_LOG_DIR, as dcgm-exporter's Kubernetes mode would.
    expect(metrics).toMatch(
      /^DCGM_FI_DEV_GPU_TEMP\{gpu="2",.*namespace="ml-training",pod="trainer-2",container="main",pod_uid="[0-9a-f-]+"\} /m,
    );
    const lastXid = Number(/^gpu_reflex_last_xid_timestamp_seconds (\S+)$/m.exec(metrics)?.[1]);
    expect(lastXid).toBe(Date.parse(fromNvml.detail.observedAt as string) / 1000);

    stop.abort();
    expect(await exit).toBe(0);
    expect(events.at(-1)?.detailType).toBe('GPU Utilization Summary');
    expect(logs.some((l) => l.includes('"msg":"agent stopped"'))).toBe(true);
    expect(logs.some((l) => l.includes('UV_THREADPOOL_SIZE'))).toBe(false);
  });
});

describe('runAgent on an injected clock', () => {
  it('samples when the clock it was given moves, not when real time passes', async () => {
    const library = await buildMockNvml();
    process.env.MOCK_NVML_QUIET = '1';
    const mock = loadMockNvmlControls(library);
    mock.setScenario(join(MOCK_NVML_SCENARIOS, 'dgx-a100-8x.json'));
    mock.setManualClock(false);
    const dir = await mkdtemp(join(tmpdir(), 'gr-runtime-clock-'));
    const config = loadAgentConfig({
      NODE_NAME: 'gpu-node-1',
      NVML_LIBRARY_PATH: library,
      HTTP_PORT: '0',
      KMSG_PATH: join(dir, 'no-kmsg'),
      PROC_ROOT: await fakeProcRoot([]),
      POD_LOG_DIR: join(dir, 'pods'),
      // An hour between samples: only the injected clock can bring the second one within this test.
      SAMPLE_INTERVAL_MS: '3600000',
      UTILIZATION_WINDOW_MS: '3600000',
    });
    const clock = new FakeClock(Date.UTC(2026, 11, 5));
    const { io, events, logs, next } = capture();
    const stop = new AbortController();
    let onReady = () => {};
    const ready = new Promise<void>((resolve) => (onReady = resolve));
    const exit = runAgent({ config, io, stop: stop.signal, print: true, clock, env: {}, onReady: () => onReady() });
    await Promise.race([
      ready,
      exit.then((code) => Promise.reject(new Error(`agent exited ${code}: ${logs.join('\n')}`))),
    ]);
    const inventory = await next((e) => e.detailType === 'GPU Inventory');
    expect(inventory.detail.observedAt).toBe('2026-12-05T00:00:00.000Z');
    expect(events.some((e) => e.detailType === 'GPU Utilization Summary')).toBe(false);

    // The second sample is due an hour of the clock later (once the loop waits on its timer); it
    // closes the utilization window.
    for (let i = 0; i < 10_000 && clock.pendingTimers === 0; i++) await new Promise((r) => setImmediate(r));
    expect(clock.nextDue()).toBe(Date.UTC(2026, 11, 5, 1));
    clock.advance(3_600_000);
    const summary = await next((e) => e.detailType === 'GPU Utilization Summary');
    expect(summary.detail).toMatchObject({ windowEnd: '2026-12-05T01:00:00.000Z' });

    stop.abort();
    expect(await exit).toBe(0);
  });
});

describe('runtime helpers', () => {
  it.each([
    [undefined, true],
    ['4', true],
    ['eight', true],
    ['8', false],
    ['16', false],
  ])('warns about UV_THREADPOOL_SIZE=%s: %s', (value, warns) => {
    expect(threadPoolWarning({ UV_THREADPOOL_SIZE: value }) !== undefined).toBe(warns);
  });

  it.each([
    ['6,1234,5000000,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=x, y', 6_000_000, true],
    ['6,1234,7000000,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=x, y', 6_000_000, false],
    ['[ 5.000000] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=x, y', 6_000_000, false],
  ])('skips /dev/kmsg records from before the start: %s', (line, startUs, skipped) => {
    expect(kmsgRecordBefore(line, startUs)).toBe(skipped);
  });
});
