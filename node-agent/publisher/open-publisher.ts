/**
 * Wiring: a Publisher on a real spool file, a dead-letter file and (unless injected) the real
 * EventBridge client. The agent's entry point calls this once; tests inject `send` and `clock`.
 */
import { systemClock, type Clock } from '../clock.ts';
import type { AgentConfig } from '../config.ts';
import { fileDeadLetter } from './dead-letter.ts';
import { dryRunSender } from './dry-run-sender.ts';
import { Publisher } from './publisher.ts';
import { DEFAULT_PUBLISHER_SETTINGS, type PublisherSettings } from './publisher-settings.ts';
import type { PublisherMetrics } from './publisher-metrics.ts';
import { sdkSender } from './sdk-sender.ts';
import { Spool } from './spool.ts';
import { silentLog, type PublisherLog, type PutEventsSender } from './types.ts';

export interface OpenPublisherOptions {
  busName: string;
  spoolPath: string;
  spoolMaxBytes: number;
  deadLetterPath: string;
  /** Defaults to the real EventBridge client (`sdkSender()`). */
  send?: PutEventsSender;
  clock?: Clock;
  random?: () => number;
  metrics?: PublisherMetrics;
  log?: PublisherLog;
  settings?: Partial<Omit<PublisherSettings, 'busName'>>;
}

/** Opens the spool first: whatever it holds is replayed before any new event is sent. */
export async function openPublisher(options: OpenPublisherOptions): Promise<Publisher> {
  const log = options.log ?? silentLog;
  const { spool, recovered } = await Spool.open({ path: options.spoolPath, maxBytes: options.spoolMaxBytes, log });
  if (recovered.events > 0) log.info('spool recovered; replaying before new events', { ...recovered });
  const deps = {
    send: options.send ?? sdkSender(),
    spool,
    deadLetter: fileDeadLetter(options.deadLetterPath),
    clock: options.clock ?? systemClock,
    random: options.random ?? Math.random,
    log,
    ...(options.metrics ? { metrics: options.metrics } : {}),
  };
  return new Publisher(deps, { ...DEFAULT_PUBLISHER_SETTINGS, ...options.settings, busName: options.busName });
}

/** The agent entry point's one call: everything from the frozen config. */
export function openPublisherFromConfig(
  config: Pick<AgentConfig, 'eventBusName' | 'spoolPath' | 'spoolMaxBytes' | 'deadLetterPath' | 'batchDelayMs' | 'publishMaxAttempts' | 'publishProbeIntervalMs' | 'dryRun'>,
  extras: { metrics?: PublisherMetrics; log?: PublisherLog; send?: PutEventsSender } = {},
): Promise<Publisher> {
  const log = extras.log ?? silentLog;
  const send = extras.send ?? (config.dryRun ? dryRunSender(log) : undefined);
  return openPublisher({
    busName: config.eventBusName,
    spoolPath: config.spoolPath,
    spoolMaxBytes: config.spoolMaxBytes,
    deadLetterPath: config.deadLetterPath,
    log,
    ...(send ? { send } : {}),
    ...(extras.metrics ? { metrics: extras.metrics } : {}),
    settings: { batchDelayMs: config.batchDelayMs, maxAttempts: config.publishMaxAttempts, probeIntervalMs: config.publishProbeIntervalMs },
  });
}
