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
import { silentLog, type OutgoingEvent, type PublisherLog, type PutEventsSender } from './types.ts';
import { catalogProblems } from '../events.ts';

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
  /** PublisherDeps.check: the agent passes the catalog check (`catalogProblems`). */
  check?: (event: OutgoingEvent) => readonly string[];
}

/** Opens the spool first: whatever it holds is replayed before any new event is sent. */
export async function openPublisher(options: OpenPublisherOptions): Promise<Publisher> {
  const log = options.log ?? silentLog;
  const { spool, recovered } = await Spool.open({ path: options.spoolPath, maxBytes: options.spoolMaxBytes, log });
  if (recovered.events > 0) log.info('spool recovered; replaying before new events', { ...recovered });
  const settings = { ...DEFAULT_PUBLISHER_SETTINGS, ...options.settings, busName: options.busName };
  const journal = settings.writeAheadCritical ? await openJournal(`${options.spoolPath}.wal`, spool, log) : undefined;
  const deps = {
    send: options.send ?? sdkSender(),
    spool,
    ...(journal ? { journal } : {}),
    deadLetter: fileDeadLetter(options.deadLetterPath),
    clock: options.clock ?? systemClock,
    random: options.random ?? Math.random,
    log,
    ...(options.metrics ? { metrics: options.metrics } : {}),
    ...(options.check ? { check: options.check } : {}),
  };
  return new Publisher(deps, settings);
}

/**
 * Opens the write-ahead journal. Critical events a killed process had journaled but neither
 * delivered nor spooled are moved into the spool (after what it holds), so they are replayed like
 * any spooled event; the journal then forgets them. An event delivered just before the kill, its
 * acknowledgement not yet written, goes out again under its own id (consumers deduplicate).
 */
async function openJournal(path: string, spool: Spool, log: PublisherLog): Promise<Spool> {
  const { spool: journal } = await Spool.open({ path, maxBytes: 16 * 1024 * 1024, log });
  if (journal.events === 0) return journal;
  const inSpool = new Set((await spool.readHead(spool.events)).map((r) => r.seq));
  const left = (await journal.readHead(journal.events)).filter((r) => !inSpool.has(r.seq));
  if (left.length > 0) {
    await spool.append(left);
    log.info('write-ahead journal recovered; replaying', { events: left.length });
  }
  await journal.ack((await journal.readHead(journal.events)).map((r) => r.seq));
  return journal;
}

/** The agent entry point's one call: everything from the frozen config. */
export async function openPublisherFromConfig(
  config: Pick<
    AgentConfig,
    | 'eventBusName'
    | 'alibabaEventBridge'
    | 'spoolPath'
    | 'spoolMaxBytes'
    | 'deadLetterPath'
    | 'batchDelayMs'
    | 'publishMaxAttempts'
    | 'publishProbeIntervalMs'
    | 'dryRun'
  >,
  extras: { metrics?: PublisherMetrics; log?: PublisherLog; send?: PutEventsSender; clock?: Clock } = {},
): Promise<Publisher> {
  const log = extras.log ?? silentLog;
  const send =
    extras.send ??
    (config.dryRun
      ? dryRunSender(log)
      : config.alibabaEventBridge
        ? (await import('./alibaba-sender.ts')).alibabaSender(config.alibabaEventBridge)
        : undefined);
  return openPublisher({
    busName: config.eventBusName,
    spoolPath: config.spoolPath,
    spoolMaxBytes: config.spoolMaxBytes,
    deadLetterPath: config.deadLetterPath,
    log,
    // Every event is checked against the catalog's schema before it is sent (STYLE.md "Boundaries").
    check: catalogProblems,
    ...(send ? { send } : {}),
    ...(extras.metrics ? { metrics: extras.metrics } : {}),
    ...(extras.clock ? { clock: extras.clock } : {}),
    settings: {
      batchDelayMs: config.batchDelayMs,
      maxAttempts: config.publishMaxAttempts,
      probeIntervalMs: config.publishProbeIntervalMs,
    },
  });
}
