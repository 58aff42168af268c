/**
 * Publisher benchmark through the real EventBridge SDK to the embedded bus on loopback.
 * Run: `npx tsx bench/publisher.ts` (not a vitest test: it measures real time).
 *
 * - eventsPerSecond: a burst of events published at once, until the bus has them all (memory
 *   path: full batches of 10, one call in flight at a time).
 * - p50Ms / p99Ms: publish() to PutEvents acknowledgment at a steady 500 events/s (a batch fills
 *   in ~20 ms, well inside the 200 ms window), i.e. batching wait + one call.
 * - replayEventsPerSecond: a spool filled while the bus was down, drained after it is back.
 * - baselineEventsPerSecond: the bare SDK, sequential PutEvents of 10 entries, no publisher: the
 *   ceiling on this machine (the bus shares the process and its CPU), to read the others against.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { atLeast, below, info, percentile, type BenchSuite } from './harness.ts';
import { startLocalBus, type LocalBus } from '../infra/local/bus/index.ts';
import { openPublisher } from '../node-agent/publisher/open-publisher.ts';
import type { Publisher } from '../node-agent/publisher/publisher.ts';
import { defaultEventBridgeClient, sdkSender } from '../node-agent/publisher/sdk-sender.ts';
import { toEntry, toRecord, type OutgoingEvent, type PutEventsSender } from '../node-agent/publisher/types.ts';

export interface PublisherBenchResult {
  eventsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  replayEventsPerSecond: number;
  baselineEventsPerSecond: number;
  events: { burst: number; steady: number; replay: number };
}

const event = (n: number): OutgoingEvent => ({
  source: 'gpu-reflex.node-agent',
  detailType: 'GPU Utilization Summary',
  detail: {
    eventId: `bench-${n}`,
    node: 'gpu-node-1',
    gpu: n % 8,
    utilization: { avg: 71.5, max: 99, p95: 97 },
    windowMs: 60_000,
  },
  time: new Date(),
  priority: 'normal',
});

/** Resolves once `cond()` holds, checking every millisecond (a spin would steal the CPU it measures). */
async function until(cond: () => boolean, timeoutMs = 120_000): Promise<void> {
  const start = performance.now();
  while (!cond()) {
    if (performance.now() - start > timeoutMs) throw new Error('benchmark timed out');
    await new Promise((r) => setTimeout(r, 1));
  }
}

export async function runPublisherBench(
  options: { burst?: number; steady?: number; replay?: number } = {},
): Promise<PublisherBenchResult> {
  const burst = options.burst ?? 5_000;
  const steady = options.steady ?? 2_000;
  const replay = options.replay ?? 5_000;
  const saved = { ...process.env };
  process.env.AWS_REGION ??= 'us-east-1';
  process.env.AWS_ACCESS_KEY_ID ??= 'AKIDLOCAL';
  process.env.AWS_SECRET_ACCESS_KEY ??= 'local-secret';
  const bus: LocalBus = await startLocalBus({ busName: 'gpu-reflex' });
  process.env.AWS_ENDPOINT_URL_EVENTBRIDGE = bus.url;
  const dir = await mkdtemp(join(tmpdir(), 'gpu-reflex-bench-'));
  const acked = new Map<string, number>();
  const inner = sdkSender(defaultEventBridgeClient());
  const send: PutEventsSender = async (entries, o) => {
    const results = await inner(entries, o);
    const now = performance.now();
    results.forEach((r, i) => {
      if (r.ok) acked.set((JSON.parse(entries[i]!.Detail) as { eventId: string }).eventId, now);
    });
    return results;
  };
  let publisher: Publisher | undefined;
  try {
    publisher = await openPublisher({
      busName: 'gpu-reflex',
      spoolPath: join(dir, 'spool.jsonl'),
      spoolMaxBytes: 64 << 20,
      deadLetterPath: join(dir, 'dead.jsonl'),
      send,
    });

    // 1. Burst.
    let t0 = performance.now();
    for (let i = 0; i < burst; i++) publisher.publish(event(i));
    await until(() => bus.events.length >= burst);
    const eventsPerSecond = burst / ((performance.now() - t0) / 1000);

    // 2. Steady 500/s: one event per 2 ms, paced by the clock, not by sleeping per event.
    const published = new Map<string, number>();
    t0 = performance.now();
    let next = 0;
    await until(() => {
      const due = Math.min(steady, Math.floor((performance.now() - t0) / 2));
      for (; next < due; next++) {
        const id = burst + next;
        published.set(`bench-${id}`, performance.now());
        publisher!.publish(event(id));
      }
      return bus.events.length >= burst + steady;
    });
    const latencies = [...published].map(([id, at]) => (acked.get(id) ?? Number.NaN) - at);

    // 3. Replay: bus down long enough to spool, then back.
    bus.setDown(true);
    const base = burst + steady;
    for (let i = 0; i < replay; i++) publisher.publish(event(base + i));
    await until(() => publisher!.status().spooledEvents >= replay);
    bus.setDown(false);
    t0 = performance.now();
    await publisher.close({ deadlineMs: 60_000 });
    const replayed = bus.events.length - base;
    const replayEventsPerSecond = replayed / ((performance.now() - t0) / 1000);
    if (replayed !== replay) throw new Error(`replay delivered ${replayed} of ${replay}`);

    // 4. Baseline: the bare SDK, same entries, no publisher.
    const entries = Array.from({ length: 10 }, (_, i) => toEntry(toRecord(event(i), i), 'gpu-reflex'));
    const calls = Math.ceil(burst / 10);
    t0 = performance.now();
    for (let i = 0; i < calls; i++) await inner(entries);
    const baselineEventsPerSecond = (calls * 10) / ((performance.now() - t0) / 1000);

    return {
      eventsPerSecond: Math.round(eventsPerSecond),
      p50Ms: Number(percentile(latencies, 50).toFixed(2)),
      p99Ms: Number(percentile(latencies, 99).toFixed(2)),
      replayEventsPerSecond: Math.round(replayEventsPerSecond),
      baselineEventsPerSecond: Math.round(baselineEventsPerSecond),
      events: { burst, steady, replay },
    };
  } finally {
    await bus.close();
    await rm(dir, { recursive: true, force: true });
    process.env = saved;
  }
}

/**
 * For `gpu-reflex bench publisher`. Targets: an 8-GPU node emits a few events a second and an XID
 * storm a few hundred; a full 64 MiB spool (~200k events) should drain in minutes.
 */
export const publisherBenchSuite: BenchSuite = {
  name: 'publisher',
  summary: 'node-agent publisher through the real EventBridge SDK to the local bus',
  async run(progress) {
    progress('burst 5000, steady 500/s for 4 s, replay 5000 from the spool');
    const r = await runPublisherBench();
    return [
      atLeast('burst throughput', r.eventsPerSecond, 'events/s', 500),
      below('publish→ack p50 at 500 events/s', r.p50Ms, 'ms', 100),
      below('publish→ack p99 at 500 events/s', r.p99Ms, 'ms', 250),
      atLeast('spool replay throughput', r.replayEventsPerSecond, 'events/s', 500),
      info('bare SDK PutEvents (10 per call), same machine', r.baselineEventsPerSecond, 'events/s'),
    ];
  },
};

if (import.meta.url === `file://${process.argv[1]}`) {
  const result = await runPublisherBench();
  console.log(JSON.stringify(result, null, 2));
}
