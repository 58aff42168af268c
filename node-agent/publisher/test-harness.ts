/**
 * Shared set-up for publisher tests: a publisher on a temporary spool, a fake clock and
 * deterministic jitter. `tick(ms)` lets the pump settle, steps time, and waits until the pump has nothing to do.
 */
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeClock } from '../clock.ts';
import { Metrics } from '../metrics.ts';
import { openPublisher } from './open-publisher.ts';
import type { Publisher } from './publisher.ts';
import type { PublisherSettings } from './publisher-settings.ts';
import { registerPublisherMetrics } from './publisher-metrics.ts';
import type { OutgoingEvent, Priority, PublisherLog, PutEventsSender } from './types.ts';

export const TEST_SETTINGS: Omit<PublisherSettings, 'busName'> = {
  batchDelayMs: 200,
  // Most tests exercise the batch window with critical events; the immediate path has its own test.
  criticalImmediately: false,
  // Most tests follow one event's path through memory; write-ahead has its own tests.
  writeAheadCritical: false,
  maxAttempts: 3,
  backoff: { baseMs: 100, capMs: 1_000 },
  probeIntervalMs: 5_000,
  maxQueuedEvents: 1_000,
};

export interface Harness {
  dir: string;
  spoolPath: string;
  deadLetterPath: string;
  clock: FakeClock;
  metrics: Metrics;
  publisher: Publisher;
  tick(ms?: number): Promise<void>;
  /** A new publisher on the same spool (the old one is abandoned, as if the process died). */
  restart(send?: PutEventsSender, options?: { waitIdle?: boolean }): Promise<Publisher>;
  deadLetterText(): Promise<string>;
}

export async function makeHarness(
  send: PutEventsSender,
  options: {
    spoolMaxBytes?: number;
    settings?: Partial<PublisherSettings>;
    dir?: string;
    check?: (event: OutgoingEvent) => readonly string[];
    log?: PublisherLog;
  } = {},
): Promise<Harness> {
  const dir = options.dir ?? (await mkdtemp(join(tmpdir(), 'gpu-reflex-publisher-')));
  const spoolPath = join(dir, 'spool', 'spool.jsonl');
  const deadLetterPath = join(dir, 'dead-letter.jsonl');
  const metrics = new Metrics();
  const open = (s: PutEventsSender, clock: FakeClock) =>
    openPublisher({
      busName: 'gpu-reflex',
      spoolPath,
      spoolMaxBytes: options.spoolMaxBytes ?? 1024 * 1024,
      deadLetterPath,
      send: s,
      clock,
      random: () => 0.5,
      metrics: registerPublisherMetrics(metrics),
      settings: { ...TEST_SETTINGS, ...options.settings },
      ...(options.check ? { check: options.check } : {}),
      ...(options.log ? { log: options.log } : {}),
    });
  const h: Harness = {
    dir,
    spoolPath,
    deadLetterPath,
    clock: new FakeClock(),
    metrics,
    publisher: undefined as unknown as Publisher,
    async tick(ms = 0) {
      // Let the pump take in what was just published (and set its timers) before time moves.
      await h.publisher.whenIdle();
      h.clock.advance(ms);
      await h.publisher.whenIdle();
    },
    async restart(s = send, { waitIdle = true } = {}) {
      // The old publisher keeps its own clock, which nobody moves again: it never wakes, like a
      // killed process. Whatever it held only in memory is gone.
      h.clock = new FakeClock(h.clock.now());
      h.publisher = await open(s, h.clock);
      if (waitIdle) await h.publisher.whenIdle();
      return h.publisher;
    },
    deadLetterText: () => readFile(deadLetterPath, 'utf8').catch(() => ''),
  };
  h.publisher = await open(send, h.clock);
  await h.publisher.whenIdle();
  return h;
}

const PRIORITY_TYPES: Record<Priority, string> = {
  critical: 'GPU XID Error',
  normal: 'GPU Inventory',
  bulk: 'GPU Utilization Summary',
};

/** A small event whose eventId says what it is: `critical-3`. */
export function testEvent(
  n: number,
  priority: Priority = 'critical',
  extra: Record<string, unknown> = {},
): OutgoingEvent {
  return {
    source: 'gpu-reflex.node-agent',
    detailType: PRIORITY_TYPES[priority],
    detail: { eventId: `${priority}-${n}`, node: 'gpu-node-1', n, ...extra },
    time: new Date(Date.UTC(2026, 0, 1, 0, 0, n)),
    resources: ['arn:aws:ec2:cn-hangzhou:123456789012:instance/i-gpu1'],
    priority,
  };
}
