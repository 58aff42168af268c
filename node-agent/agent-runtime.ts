/**
 * The agent process: wiring (NVML, publisher, metrics, HTTP) and the loops that drive the steps of
 * agent.ts on the one injected clock (loops.ts; the system clock unless a test passes a VirtualClock).
 * Startup, shutdown and exit codes are decided here, once.
 *
 * Loops: a sample every SAMPLE_INTERVAL_MS (fixed rate); the actuator's pass over its Node's GPU
 * actions when GPU_ACTIONS is on (actuator-runtime.ts); NVML event waits of EVENT_WAIT_MS in a
 * loop (each one a koffi async call of at most the watcher's 100 ms slice, so the event loop stays
 * free and a stop is seen within one slice); the kernel log followed from KMSG_PATH when it can be
 * read (a missing or unreadable kmsg is a warning: XIDs still come from NVML), from the cursor kept
 * at KMSG_CURSOR_PATH (kmsg/cursor.ts).
 *
 * Shutdown (the `stop` signal: SIGTERM/SIGINT in the CLI): stop the loops, flush the utilization
 * window, `publisher.close({ deadlineMs })` (what is not delivered by then stays in the spool),
 * close the NVML event watcher, and only then `nvml.close()`: a wait may still be running on a
 * pool thread, and nvmlShutdown under it would free its event set.
 */
import { podResourcesSource } from './collectors/pod-resources-source.ts';
import type { CliIo } from '../events/cli-kit/command.ts';
import { Agent, type EventSink } from './agent.ts';
import { systemClock, type Clock } from './clock.ts';
import { runLoops, sleepOn, type LoopSpec } from './loops.ts';
import { registerAgentMetrics } from './agent-metrics.ts';
import { kubeletLogPodNames } from './collectors/pod-names.ts';
import { DEFAULT_THRESHOLDS, type HealthThresholds } from './collectors/health.ts';
import type { AgentConfig } from './config.ts';
import type { DcgmOptions } from './dcgm.ts';
import type { OutgoingEvent } from './events.ts';
import { AgentHealth, startAgentHttp, type AgentHttpServer } from './http.ts';
import { cursorFile } from './kmsg/cursor.ts';
import { followKernelLog } from './kmsg/follow.ts';
import { KernelLogCatchUp } from './kmsg/read-log.ts';
import { jsonLog } from './log.ts';
import { Metrics } from './metrics.ts';
import { Nvml, NvmlError, NvmlNotFoundError } from './nvml/nvml.ts';
import { openPublisherFromConfig } from './publisher/open-publisher.ts';
import type { Publisher } from './publisher/publisher.ts';
import { registerPublisherMetrics } from './publisher/publisher-metrics.ts';
import type { PublisherLog } from './publisher/types.ts';

export { kmsgRecordBefore } from './kmsg/follow.ts';

/** Exit codes of `gpu-reflex agent` (docs/node-agent.md). */
export const EXIT = {
  ok: 0,
  /** Something unexpected: the HTTP port taken, the spool unusable, a bug. */
  failed: 1,
  /** Bad usage or a bad environment variable. */
  config: 2,
  /** The NVML library is not there: no driver on this node, or a wrong NVML_LIBRARY_PATH. */
  nvmlNotFound: 3,
  /** The library loaded but nvmlInit failed (driver not loaded, version mismatch). */
  nvmlInit: 4,
} as const;

/** Longest one event wait runs before the loop looks at `stop` again (the watcher slices it). */
export const EVENT_WAIT_MS = 100;
/** Pause after a failed event wait. */
export const EVENT_RETRY_MS = 1_000;
/** What the publisher gets at shutdown; the DaemonSet's grace period (30 s) leaves room for it. */
export const SHUTDOWN_DEADLINE_MS = 10_000;

export interface RunAgentOptions {
  config: AgentConfig;
  io: CliIo;
  /** Aborting it shuts the agent down cleanly (the CLI wires SIGTERM and SIGINT to it). */
  stop: AbortSignal;
  /** One sample and inventory, published (or printed), then exit. */
  once?: boolean;
  /** Print events as JSON lines on `io.out` instead of publishing (no publisher, no spool). */
  print?: boolean;
  /** The process environment, for the UV_THREADPOOL_SIZE check. */
  env?: Record<string, string | undefined>;
  /**
   * The one clock of the agent's loops, timers, publisher, actuator and event times (default: the
   * system clock). A test passes a VirtualClock and moves it instead of waiting.
   */
  clock?: Clock;
  /** Called once the loops run (tests: the HTTP port). */
  onReady?: (info: { httpPort: number; agent: Agent }) => void;
}

export function thresholdsOf(config: AgentConfig): HealthThresholds {
  const t = config.thresholds;
  return {
    utilHighPercent: t.gpuUtilHighPercent,
    utilHighForMs: t.gpuUtilHighForMs,
    framebufferHighPercent: t.fbUsedHighPercent,
    temperatureWarnC: t.tempWarnC,
    temperatureCritC: t.tempCritC,
    temperatureFromGpu: t.tempFromGpu,
    powerHighPercent: t.powerHighPercent,
    hysteresis: t.hysteresisPercent,
    monitoringFailures: DEFAULT_THRESHOLDS.monitoringFailures,
    memoryTemperatureMaxC: DEFAULT_THRESHOLDS.memoryTemperatureMaxC,
    pcieBusyPercent: DEFAULT_THRESHOLDS.pcieBusyPercent,
    fabricGraceMs: DEFAULT_THRESHOLDS.fabricGraceMs,
    nvlinkCrcPerMinute: DEFAULT_THRESHOLDS.nvlinkCrcPerMinute,
    nvlinkReplayPerMinute: DEFAULT_THRESHOLDS.nvlinkReplayPerMinute,
  };
}

/** `--dry-run`: one JSON object per event on stdout. */
export function printSink(out: (line: string) => void): EventSink {
  return {
    publish: (e: OutgoingEvent) =>
      out(
        JSON.stringify({
          source: e.source,
          detailType: e.detailType,
          time: e.time.toISOString(),
          priority: e.priority,
          detail: e.detail,
        }),
      ),
  };
}

/** koffi's async NVML wait runs on libuv's pool, shared with file I/O (docs/node-agent.md). */
export function threadPoolWarning(env: Record<string, string | undefined>): string | undefined {
  const n = Number(env.UV_THREADPOOL_SIZE);
  if (env.UV_THREADPOOL_SIZE && Number.isInteger(n) && n >= 8) return undefined;
  return (
    `UV_THREADPOOL_SIZE is ${env.UV_THREADPOOL_SIZE ? env.UV_THREADPOOL_SIZE : 'unset (4)'}: set it to 8 or ` +
    `more, or NVML event waits can starve file I/O`
  );
}

/** The sample loop (fixed rate): the agent's runtime and the embedded stack's in-process agents run this one. */
export function sampleLoop(agent: Agent, everyMs: number): LoopSpec {
  return { name: 'sample', everyMs, cadence: 'rate', run: () => agent.sampleOnce() };
}

export async function runAgent(o: RunAgentOptions): Promise<number> {
  const { config, io } = o;
  const clock = o.clock ?? systemClock;
  const log = jsonLog(io.err);
  // --once makes no event waits: the pool size does not matter there.
  const warning = o.once ? undefined : threadPoolWarning(o.env ?? process.env);
  if (warning) log.warn(warning);
  let nvml: Nvml;
  try {
    nvml = Nvml.open({ libraryPath: config.nvmlLibraryPath });
  } catch (err) {
    if (err instanceof NvmlNotFoundError) {
      io.err(err.message);
      return EXIT.nvmlNotFound;
    }
    if (err instanceof NvmlError) {
      io.err(`NVML did not initialise: ${err.message}`);
      return EXIT.nvmlInit;
    }
    throw err;
  }
  const registry = new Metrics();
  const health = new AgentHealth();
  let publisher: Publisher | undefined;
  let agent: Agent | undefined;
  let http: AgentHttpServer | undefined;
  // The follower of the kernel log (runLoops) and the agent's XID handling meet here.
  const kernelLog = new KernelLogCatchUp(clock);
  try {
    if (!o.print)
      publisher = await openPublisherFromConfig(config, { metrics: registerPublisherMetrics(registry), log, clock });
    agent = new Agent({
      kernelLog,
      nodeName: config.nodeName,
      nvml,
      sink: publisher ?? printSink(io.out),
      now: () => clock.now(),
      procRoot: config.procRoot,
      podResources: podResourcesSource(config.podResourcesSocket),
      thresholds: thresholdsOf(config),
      utilizationWindowMs: config.utilizationWindowMs,
      inventoryIntervalMs: config.inventoryIntervalMs,
      xidAggregateWindowMs: config.xidAggregateWindowMs,
      watchEvents: !o.once,
      // DCGM_METRICS=false: no DCGM_FI_* series where dcgm-exporter already exports them.
      metrics: registerAgentMetrics(
        registry,
        config.dcgmMetrics ? { hostname: config.nodeName, podNames: kubeletLogPodNames(config.podLogDir) } : undefined,
      ),
      health,
      log,
      // --dry-run keeps nothing on disk; otherwise the counters live beside the spool.
      ...(o.print
        ? {}
        : { eccStatePath: `${config.spoolPath}.ecc.json`, gpuMemoryPath: `${config.spoolPath}.gpus.json` }),
      ...(config.expectedGpus ? { expectedGpus: config.expectedGpus } : {}),
    });
    log.info('agent started', {
      node: config.nodeName,
      gpus: agent.source.gpus.length,
      driver: agent.source.system.driverVersion,
      once: o.once ?? false,
      dryRun: o.print ?? false,
    });
    if (o.once) {
      await agent.sampleOnce();
    } else {
      const p = publisher;
      http = await startAgentHttp({
        port: config.httpPort,
        metrics: registry,
        health,
        publisherStatus: () => (p ? p.status() : { lastPublishAt: null, spooledEvents: 0 }),
        // The agent's clock (as the Agent's `now` above); degraded after DELIVERY_STALL_MINUTES of backlog.
        now: Date.now,
        stallMs: config.deliveryStallMs,
      });
      const sink = publisher ?? printSink(io.out);
      // The kernel-log cursor's last save waits for the flush: it must not pass XID repeats held until then.
      let flushed!: () => void;
      const afterFlush = new Promise<void>((resolve) => (flushed = resolve));
      await runAgentLoops({
        agent,
        nvml,
        sink,
        config,
        o,
        clock,
        log,
        httpPort: http.port,
        kernelLog,
        publisher,
        flushed: afterFlush,
      });
      agent.flush();
      flushed();
    }
    return EXIT.ok;
  } catch (err) {
    log.error('agent failed', { error: err instanceof Error ? err.message : String(err) });
    return EXIT.failed;
  } finally {
    const report = await publisher?.close({ deadlineMs: SHUTDOWN_DEADLINE_MS });
    if (report && report.spooled > 0) log.warn('events left in the spool for the next start', { ...report });
    await agent?.close();
    nvml.close();
    await http?.close();
    log.info('agent stopped');
  }
}

async function runAgentLoops(w: {
  agent: Agent;
  nvml: Nvml;
  sink: EventSink;
  config: AgentConfig;
  o: RunAgentOptions;
  clock: Clock;
  log: PublisherLog;
  httpPort: number;
  kernelLog: KernelLogCatchUp;
  publisher: Publisher | undefined;
  /** Resolves once the agent was flushed at stop (the kernel-log cursor's last save waits for it). */
  flushed?: Promise<unknown>;
}): Promise<void> {
  const { agent, config, clock, log } = w;
  const { stop } = w.o;
  const sampling = runLoops([sampleLoop(agent, config.sampleIntervalMs)], { clock, stop, log });
  const events = (async () => {
    while (!stop.aborted) {
      // The wait blocks in the driver (its own time, sliced): not a timer of ours.
      await agent.pollEventsOnce(EVENT_WAIT_MS).catch((err: unknown) => {
        log.error('NVML event wait failed', { error: err instanceof Error ? err.message : String(err) });
      });
      // A failing wait returns at once: pause instead of spinning on a broken driver.
      if (agent.eventWaitFailing) await sleepOn(clock, EVENT_RETRY_MS, stop);
    }
  })();
  // --dry-run keeps nothing on disk: no cursor, each start skips what the kernel logged before it.
  const p = w.publisher;
  const durable = p ? { durable: () => p.journaledSoFar() } : {};
  const cursor = w.o.print ? {} : { cursor: cursorFile(config.kmsgCursorPath), ...durable };
  const kernel = followKernelLog(agent, config.kmsgPath, stop, log, w.kernelLog, {
    ...cursor,
    ...(w.flushed ? { flushed: w.flushed } : {}),
    now: () => clock.now(),
  });
  // Loaded only with GPU_ACTIONS on: the Kubernetes client it brings is most of the agent's memory
  // (docs/node-agent.md "Memory"); node-agent/agent-bundle.test.ts keeps it off the start-up path.
  const actions = config.gpuActions.enabled
    ? import('./actuator-runtime.ts').then((m) =>
        runLoops(
          [m.actuatorFromConfig({ config, nvml: w.nvml, agent, sink: w.sink, clock, dryRun: w.o.print === true, log })],
          { clock, stop, log },
        ),
      )
    : Promise.resolve();
  w.o.onReady?.({ httpPort: w.httpPort, agent });
  await Promise.all([sampling, events, kernel, actions]);
}

/** DCGM_METRICS=false: no DCGM_FI_* series, where dcgm-exporter already exports them on the node. */
export function dcgmOptionsOf(
  config: Pick<AgentConfig, 'dcgmMetrics' | 'nodeName' | 'podLogDir'>,
): DcgmOptions | undefined {
  return config.dcgmMetrics ? { hostname: config.nodeName, podNames: kubeletLogPodNames(config.podLogDir) } : undefined;
}
