/**
 * The node agent against issue 3's targets, measured on a REAL agent process: 8 mock GPUs
 * (dgx-a100-8x), 1 s sampling, the real EventBridge SDK publishing to the local bus in this
 * process.
 *
 * Per run: wait for the agent's first inventory on the bus, 3 s warm-up, then
 *  - steady state (15 s, no XIDs): CPU % of one core from /proc/<pid>/stat utime+stime deltas;
 *  - XID phase: SIGUSR2 tells the preloaded injector (agent-xid-injector.ts) to make 20 XIDs
 *    visible in NVML, one per 500 ms; latency = bus receipt − injection, both CLOCK_MONOTONIC;
 *  - peak RSS (VmHWM) at the end, then SIGTERM and the exit code.
 * Two runs: the agent bundled to plain JavaScript (how an image ships it; the targets apply
 * there), and `node bin/gpu-reflex.js agent` through tsx (the development entry; informational,
 * it carries tsx's loader thread). Publisher throughput is measured in-process
 * (bench/publisher.ts).
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { startLocalBus } from '../infra/local/bus/index.ts';
import { buildMockNvml, MOCK_NVML_SCENARIOS } from '../infra/local/mock-nvml/build.ts';
import { runPublisherBench } from './publisher.ts';
import { fakeProcRoot } from '../test/support/agent-fixture.ts';
import { bundleAgent, cpuSeconds, peakRssMiB, watchReceipts } from './agent-child.ts';
import { atLeast, below, info, percentile, type BenchSuite, type Measurement } from './harness.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const STEADY_MS = 15_000;
const XIDS = 20;
const XID_INTERVAL_MS = 500;

interface RunResult {
  cpuPercent: number;
  cpuPercentXidPhase: number;
  peakRssMiB: number;
  latenciesMs: number[];
  delivered: number;
  exitCode: number | null;
  shutdownMs: number;
  /**
   * Distinct GPU XID Error events on the bus (by eventId), and the XIDs they stand for (their `count`, 1 when absent).
   */
  xidEvents: number;
  xidsCarried: number;
}

/**
 * What one run injects: `count` XIDs, one per `intervalMs`; `env` adds to the agent's (BENCH_XID_LIST, BENCH_XID_GPUS).
 */
export interface XidPhase {
  count: number;
  intervalMs: number;
  env?: Record<string, string>;
}

async function until(cond: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`agent bench: timed out waiting for ${what}`);
    await sleep(10);
  }
}

export async function runOnce(
  entry: string[],
  injector: string,
  library: string,
  progress: (l: string) => void,
  phase: XidPhase = { count: XIDS, intervalMs: XID_INTERVAL_MS },
): Promise<RunResult> {
  const dir = await mkdtemp(join(tmpdir(), 'gr-agent-bench-'));
  const bus = await startLocalBus({ busName: 'gpu-reflex' });
  const receipts = watchReceipts(bus);
  const xidLog = join(dir, 'xids.jsonl');
  await writeFile(join(dir, 'kern.log'), '');
  const env = {
    PATH: process.env.PATH ?? '',
    NODE_NAME: 'bench-node-1',
    NVML_LIBRARY_PATH: library,
    MOCK_NVML_SCENARIO: join(MOCK_NVML_SCENARIOS, 'dgx-a100-8x.json'),
    SAMPLE_INTERVAL_MS: '1000',
    HTTP_PORT: '0',
    UV_THREADPOOL_SIZE: '8',
    SPOOL_PATH: join(dir, 'spool.jsonl'),
    DEAD_LETTER_PATH: join(dir, 'dead-letter.jsonl'),
    PROC_ROOT: await fakeProcRoot([4100, 4101, 4102, 4103, 4104, 4105, 4106, 4107]),
    KMSG_PATH: join(dir, 'kern.log'),
    EVENT_BUS_NAME: 'gpu-reflex',
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'AKIDLOCAL',
    AWS_SECRET_ACCESS_KEY: 'local-secret',
    AWS_ENDPOINT_URL_EVENTBRIDGE: bus.url,
    BENCH_XID_LIBRARY: library,
    BENCH_XID_LOG: xidLog,
    BENCH_XID_COUNT: String(phase.count),
    BENCH_XID_INTERVAL_MS: String(phase.intervalMs),
    ...phase.env,
  };
  const child = spawn(process.execPath, ['--import', injector, ...entry, 'agent'], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  try {
    const pid = child.pid!;
    await until(
      () => bus.events.some((e) => e['detail-type'] === 'GPU Inventory') || child.exitCode !== null,
      60_000,
      'the first inventory',
    );
    if (child.exitCode !== null) throw new Error(`agent exited ${child.exitCode}:\n${stderr}`);
    await sleep(3_000);
    let c0 = cpuSeconds(pid);
    let t0 = performance.now();
    progress(`steady state for ${STEADY_MS / 1000} s`);
    await sleep(STEADY_MS);
    const cpuPercent = (100 * (cpuSeconds(pid) - c0)) / ((performance.now() - t0) / 1000);
    c0 = cpuSeconds(pid);
    t0 = performance.now();
    progress(`${phase.count} XIDs, one per ${phase.intervalMs} ms`);
    child.kill('SIGUSR2');
    const xidsOnBus = () => bus.events.filter((e) => e['detail-type'] === 'GPU XID Error');
    const injectedSoFar = () => (existsSync(xidLog) ? readFileSync(xidLog, 'utf8').split('\n').length - 1 : 0);
    // Every XID on the bus, or (an agent that aggregates repeats sends fewer events) every XID injected
    // and then a second for the publisher's batch window.
    let allInAt: number | undefined;
    const done = () => {
      if (xidsOnBus().length >= phase.count) return true;
      if (allInAt === undefined && injectedSoFar() >= phase.count) allInAt = performance.now();
      return allInAt !== undefined && performance.now() - allInAt >= 1_000;
    };
    await until(done, phase.count * phase.intervalMs + 10_000, `${phase.count} XIDs on the bus`).catch(() => undefined);
    const cpuPercentXidPhase = (100 * (cpuSeconds(pid) - c0)) / ((performance.now() - t0) / 1000);
    const rss = peakRssMiB(pid);
    const stopAt = performance.now();
    child.kill('SIGTERM');
    const exitCode = await exited;
    const shutdownMs = performance.now() - stopAt;
    // Distinct events: a PutEvents the publisher retried can land twice (at least once, as EventBridge).
    const distinct = [...new Map(xidsOnBus().map((e) => [String(e.detail.eventId), e])).values()];
    const xidEvents = distinct.length;
    const xidsCarried = distinct.reduce((n, e) => n + (Number(e.detail.count) || 1), 0);
    receipts.stop();
    // Match each injection to its bus event by (GPU, XID), first in first out.
    const injected = (await readFile(xidLog, 'utf8'))
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { gpu: number; xid: number; rc: number; t: string });
    const arrivals = new Map<string, bigint[]>();
    bus.events.forEach((e, i) => {
      if (e['detail-type'] !== 'GPU XID Error') return;
      const key = `${(e.detail.gpu as { index: number }).index}/${String(e.detail.xid)}`;
      arrivals.set(key, [...(arrivals.get(key) ?? []), receipts.at[i]!]);
    });
    const latenciesMs: number[] = [];
    for (const x of injected) {
      if (x.rc !== 0)
        throw new Error(`the injector could not inject (rc ${x.rc}): is the mock library the one the agent loaded?`);
      const got = arrivals.get(`${x.gpu}/${x.xid}`)?.shift();
      if (got !== undefined) latenciesMs.push(Number(got - BigInt(x.t)) / 1e6);
    }
    return {
      cpuPercent,
      cpuPercentXidPhase,
      peakRssMiB: rss,
      latenciesMs,
      delivered: latenciesMs.length,
      exitCode,
      shutdownMs,
      xidEvents,
      xidsCarried,
    };
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
    receipts.stop();
    await bus.close();
    await rm(dir, { recursive: true, force: true });
  }
}

function rows(label: string, r: RunResult, targets: boolean): Measurement[] {
  const m = (metric: string, value: number, unit: string, limit: number, kind: 'below' | 'atLeast' = 'below') =>
    targets
      ? kind === 'below'
        ? below(metric, value, unit, limit)
        : atLeast(metric, value, unit, limit)
      : info(metric, value, unit);
  return [
    m(`${label}: CPU, steady (% of one core)`, Number(r.cpuPercent.toFixed(2)), '%', 2),
    info(`${label}: CPU during 2 XIDs/s (% of one core)`, Number(r.cpuPercentXidPhase.toFixed(2)), '%'),
    m(`${label}: peak RSS (VmHWM)`, Number(r.peakRssMiB.toFixed(1)), 'MiB', 100),
    info(`${label}: XID → PutEvents p50`, Number(percentile(r.latenciesMs, 50).toFixed(1)), 'ms'),
    m(`${label}: XID → PutEvents p99`, Number(percentile(r.latenciesMs, 99).toFixed(1)), 'ms', 250),
    m(`${label}: XIDs delivered of ${XIDS}`, r.delivered, 'events', XIDS, 'atLeast'),
    m(`${label}: exit code after SIGTERM`, r.exitCode ?? -1, '', 1),
    info(`${label}: SIGTERM → exit`, Math.round(r.shutdownMs), 'ms'),
  ];
}

export const agentSuite: BenchSuite = {
  name: 'agent',
  summary: 'node agent: CPU, RSS, XID → PutEvents latency, throughput',
  async run(progress) {
    const library = await buildMockNvml();
    progress('bundling the agent with esbuild');
    const bundle = await bundleAgent(ROOT);
    progress('bundled agent (as an image runs it)');
    const shipped = await runOnce([bundle.agent], bundle.injector, library, progress);
    progress('node bin/gpu-reflex.js agent (tsx)');
    const dev = await runOnce([join(ROOT, 'bin', 'gpu-reflex.js')], bundle.injector, library, progress);
    progress('publisher throughput, in-process');
    const pub = await runPublisherBench({ burst: 5_000, steady: 1_000, replay: 2_000 });
    return [
      ...rows('bundled agent', shipped, true),
      ...rows('tsx agent (bin/gpu-reflex.js)', dev, false),
      info('publisher: burst through the real SDK to the local bus', pub.eventsPerSecond, 'events/s'),
      info('publisher: spool replay after an outage', pub.replayEventsPerSecond, 'events/s'),
      info('bare SDK, sequential PutEvents of 10 (ceiling)', pub.baselineEventsPerSecond, 'events/s'),
    ];
  },
};
