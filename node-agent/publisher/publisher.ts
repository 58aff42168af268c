/**
 * The publisher: batches events into PutEvents calls, retries only what failed, spools to disk
 * when the bus is unreachable, replays in order when it is back, and flushes on shutdown.
 *
 * One pump owns all state and does one thing at a time (one call in flight), which is what keeps
 * delivery in production order: the oldest undelivered events are always the next ones sent.
 * `publish` only appends to an inbox and wakes the pump. The logical queue is
 * [spool (oldest)] ++ [memory queue]; while the spool holds anything, new events are appended
 * behind it, so the memory queue is only used when the spool is empty.
 *
 * Guarantees and their limits are listed in docs/node-agent-publisher.md.
 */
import type { Clock } from '../clock.ts';
import { EventTooLargeError, MAX_CALL_BYTES, MAX_ENTRIES_PER_CALL, entrySize, takeBatch } from './batching.ts';
import type { DeadLetterSink } from './dead-letter.ts';
import { noMetrics, type PublisherMetrics } from './publisher-metrics.ts';
import { backoffDelay, classifyCallError, sortResults } from './retry-policy.ts';
import type { PublisherSettings } from './publisher-settings.ts';
import type { SpoolPort } from './spool.ts';
import {
  MalformedEventError,
  recordFromEvent,
  silentLog,
  toEntry,
  type OutgoingEvent,
  type PublisherLog,
  type PutEventsSender,
  type QueuedRecord,
} from './types.ts';

export interface PublisherDeps {
  send: PutEventsSender;
  spool: SpoolPort;
  /**
   * The write-ahead journal for critical events (XIDs, health alarms): each is fsynced here the
   * moment it is published, before any send, and forgotten once the bus acknowledged it or the
   * spool holds it. openPublisher moves what a killed process left here into the spool.
   */
  journal?: SpoolPort;
  deadLetter: DeadLetterSink;
  /**
   * The catalog check (node-agent/events.ts `catalogProblems`): an event whose detail fails its
   * detail-type's schema is dead-lettered with a log line, never sent. Wired by openPublisherFromConfig;
   * unset, only the event's shape is checked (the publisher's own tests send schematic details).
   */
  check?: (event: OutgoingEvent) => readonly string[];
  clock: Clock;
  /** Uniform in [0, 1): the jitter source. */
  random: () => number;
  metrics?: PublisherMetrics;
  log?: PublisherLog;
}

export type PublishResult = { ok: true; seq: number } | { ok: false; error: Error };

export interface PublisherStatus {
  lastPublishAt: number | null;
  queued: number;
  spooledEvents: number;
  spoolBytes: number;
  busReachable: boolean;
}

export interface CloseReport {
  /** Events still in the spool when close returned (they are replayed on the next start). */
  spooled: number;
  deadlineHit: boolean;
}

export class PublisherClosedError extends Error {
  override name = 'PublisherClosedError';
}

export class Publisher {
  private readonly metrics: PublisherMetrics;
  private readonly log: PublisherLog;
  private inbox: QueuedRecord[] = [];
  private queue: QueuedRecord[] = [];
  private windowStart = 0;
  private nextSeq: number;
  /** Failures of the current head batch; reset by any success. */
  private failures = 0;
  private retryAt = 0;
  /** After a partial failure: exactly the entries to send next. */
  private retryOnly: QueuedRecord[] | null = null;
  private unreachable = false;
  private lastPublishAt: number | null = null;
  private closing: { hit: boolean; gaveUp: boolean; abort: AbortController; cancelTimer: () => void } | null = null;
  /** Set when the final spill starts: from then on nothing more can be accepted. */
  private sealed = false;
  private closed = false;
  private wake: (() => void) | null = null;
  private idleWaiters: (() => void)[] = [];
  private readonly done: Promise<void>;

  constructor(
    private readonly deps: PublisherDeps,
    private readonly settings: PublisherSettings,
  ) {
    this.metrics = deps.metrics ?? noMetrics;
    this.log = deps.log ?? silentLog;
    this.nextSeq = deps.spool.lastSeq + 1;
    this.updateSpoolGauges();
    this.done = this.pump().catch((err: unknown) => {
      // A spool I/O error here means the disk is gone; say so loudly, keep the process up.
      this.log.error('publisher stopped', { error: String(err) });
    });
  }

  /**
   * Accepts an event for delivery; never blocks and never throws. An invalid event, one too large
   * for any PutEvents call, or one published after close is refused (logged, counted), never sent.
   */
  publish(event: OutgoingEvent): PublishResult {
    // Accepted while closing (sent or spooled with the rest); refused once the final spill began.
    if (this.sealed) {
      const eventId = String(event?.detail?.eventId);
      const error = new PublisherClosedError(
        `publisher is closed; event ${eventId} (${String(event?.detailType)}) was not accepted`,
      );
      this.log.error('publish after close', { eventId });
      this.metrics.failed(1);
      return { ok: false, error };
    }
    let record: QueuedRecord;
    try {
      record = recordFromEvent(event, this.nextSeq);
    } catch (err) {
      const error = err as Error;
      this.log.error('invalid event, not sent', { error: error.message });
      this.metrics.failed(1);
      return { ok: false, error };
    }
    const size = entrySize(record);
    if (size > MAX_CALL_BYTES) {
      const error = new EventTooLargeError(record.eventId, record.detailType, size);
      this.log.error('event too large, not sent', { eventId: record.eventId, detailType: record.detailType, size });
      this.metrics.failed(1);
      return { ok: false, error };
    }
    this.nextSeq++;
    const problems = this.deps.check?.(event) ?? [];
    if (problems.length > 0) {
      const message = `fails its catalog schema: ${problems.join('; ')}`.slice(0, 2_000);
      this.log.error('invalid event, dead-lettered and not sent', {
        eventId: record.eventId,
        detailType: record.detailType,
        problems: problems.slice(0, 10),
      });
      // Written in order behind any other dead letters; a failing disk is logged, never thrown.
      this.rejected = this.rejected
        .then(() => this.deadLetter([{ record, code: 'InvalidDetail', message }]))
        .catch((err: unknown) =>
          this.log.error('dead-letter write failed', { eventId: record.eventId, error: String(err) }),
        );
      return { ok: false, error: new MalformedEventError(`event ${record.eventId}: ${message}`) };
    }
    this.inbox.push(record);
    if (record.priority === 'critical') this.writeAhead(record);
    this.poke();
    return { ok: true, seq: record.seq };
  }

  status(): PublisherStatus {
    return {
      lastPublishAt: this.lastPublishAt,
      queued: this.queue.length + this.inbox.length,
      spooledEvents: this.deps.spool.events,
      spoolBytes: this.deps.spool.bytes,
      busReachable: !this.unreachable,
    };
  }

  /** Resolves once the pump is parked with nothing to do before its next timer or event. */
  whenIdle(): Promise<void> {
    return new Promise((resolve) => {
      if (this.closed || (this.wake && this.inbox.length === 0)) resolve();
      else this.idleWaiters.push(resolve);
    });
  }

  /**
   * Shutdown (SIGTERM): sends what it can before `deadlineMs`, spools the rest, fsyncs, closes the
   * spool. A call still in flight at the deadline is aborted and its events spooled; if the bus
   * had already applied it, they are sent again on the next start (consumers dedupe).
   */
  async close(options: { deadlineMs: number }): Promise<CloseReport> {
    if (!this.closing && !this.closed) {
      const closing = { hit: false, gaveUp: false, abort: new AbortController(), cancelTimer: () => {} };
      this.closing = closing;
      closing.cancelTimer = this.deps.clock.setTimer(options.deadlineMs, () => {
        closing.hit = true;
        closing.abort.abort();
        this.poke();
      });
      // One immediate attempt even if the bus looked down: it may be back.
      this.retryAt = 0;
      this.poke();
    }
    await this.done;
    await this.rejected;
    return { spooled: this.deps.spool.events, deadlineHit: this.closing?.hit ?? false };
  }

  /** Dead-letter writes of events refused at publish (the catalog check), one at a time. */
  private rejected: Promise<void> = Promise.resolve();

  /** Journal operations, one at a time, in publish order; sends wait for it (write-ahead). */
  private journaled: Promise<void> = Promise.resolve();

  /** Fsyncs a critical record to the journal at once, whatever the pump is doing (a hung call too). */
  private writeAhead(record: QueuedRecord): void {
    const journal = this.deps.journal;
    if (!journal || !this.settings.writeAheadCritical) return;
    this.journaled = this.journaled
      .then(() => journal.append([record]))
      .then(() => undefined)
      .catch((err: unknown) =>
        this.log.error('write-ahead journal failed; the event is kept in memory', {
          eventId: record.eventId,
          error: String(err),
        }),
      );
  }

  /** The journal forgets records the bus acknowledged (or dead-lettered) or the spool now holds. */
  private unjournal(seqs: readonly number[]): void {
    const journal = this.deps.journal;
    if (!journal || seqs.length === 0) return;
    this.journaled = this.journaled
      .then(() => journal.ack(seqs))
      .catch((err: unknown) => this.log.warn('write-ahead journal ack failed', { error: String(err) }));
  }

  private poke(): void {
    const w = this.wake;
    this.wake = null;
    w?.();
  }

  private async pump(): Promise<void> {
    for (;;) {
      try {
        await this.absorbInbox();
        if (this.closing && (this.closing.hit || this.nothingLeftToTry())) break;
        const waitUntil = await this.step();
        if (waitUntil === 'now') continue;
        await this.park(waitUntil);
      } catch (err) {
        // Disk trouble (full, read-only, gone). Nothing was dropped: records leave memory only
        // once the spool has them. Try again later; at shutdown there is no later.
        this.log.error('publisher I/O failed; will retry', { error: String(err) });
        if (this.closing) break;
        await this.park(this.deps.clock.now() + this.probeDelay(), true);
      }
    }
    this.closing?.cancelTimer();
    this.sealed = true;
    try {
      await this.spill();
      await this.journaled;
      await this.deps.journal?.close();
      await this.deps.spool.close();
    } catch (err) {
      const lost = this.queue.length + this.inbox.length;
      this.log.error('EVENTS LOST at shutdown: spool not writable', { lost, error: String(err) });
    }
    this.closed = true;
    this.updateSpoolGauges();
    for (const w of this.idleWaiters.splice(0)) w();
  }

  /** Closing ends when memory is empty and the spool is either empty or the bus said no. */
  private nothingLeftToTry(): boolean {
    return (
      this.queue.length === 0 &&
      this.inbox.length === 0 &&
      (this.deps.spool.events === 0 || this.closing?.gaveUp === true)
    );
  }

  /**
   * Sleeps until `until` (or forever), or until poked. Resolves idle waiters first. After an I/O
   * error it sleeps even with events waiting, so a full disk is retried per probe, not in a spin.
   */
  private park(until: number | 'never', evenWithInbox = false): Promise<void> {
    // Events published while the pump was busy (after it looked at the inbox) poked nobody.
    if (this.inbox.length > 0 && !evenWithInbox) return Promise.resolve();
    for (const w of this.idleWaiters.splice(0)) w();
    return new Promise((resolve) => {
      const cancel =
        until === 'never' ? () => {} : this.deps.clock.setTimer(until - this.deps.clock.now(), () => this.poke());
      this.wake = () => {
        cancel();
        resolve();
      };
    });
  }

  /** New events join the memory queue, or the spool if it holds anything (strict order). */
  private async absorbInbox(): Promise<void> {
    if (this.deps.spool.events > 0 || this.unreachable) {
      // The memory queue joins too: it is non-empty here only if an earlier spill failed.
      await this.spill();
    } else if (this.inbox.length > 0) {
      if (this.queue.length === 0) this.windowStart = this.deps.clock.now();
      this.queue.push(...this.inbox.splice(0));
    }
    if (this.queue.length > this.settings.maxQueuedEvents) {
      this.log.warn('bus is behind; moving queued events to the spool', { queued: this.queue.length });
      await this.spill();
    }
  }

  /** Does at most one send. Returns when to look again. */
  private async step(): Promise<number | 'never' | 'now'> {
    const now = this.deps.clock.now();
    const fromSpool = this.deps.spool.events > 0;
    if (!fromSpool && this.queue.length === 0) return 'never';
    if (now < this.retryAt) return this.retryAt;
    // The batch window saves calls for inventory and utilization; an XID or health alarm goes now,
    // taking whatever is queued with it.
    if (
      !fromSpool &&
      !this.closing &&
      !this.retryOnly &&
      this.queue.length < MAX_ENTRIES_PER_CALL &&
      !(this.settings.criticalImmediately && this.queue.some((r) => r.priority === 'critical'))
    ) {
      const due = this.windowStart + this.settings.batchDelayMs;
      if (now < due) return due;
    }
    const batch =
      this.retryOnly ?? takeBatch(fromSpool ? await this.deps.spool.readHead(MAX_ENTRIES_PER_CALL) : this.queue);
    await this.sendBatch(batch);
    return 'now';
  }

  private async sendBatch(batch: QueuedRecord[]): Promise<void> {
    // Write-ahead: no critical record leaves before its journal line is on disk.
    await this.journaled;
    const entries = batch.map((r) => toEntry(r, this.settings.busName));
    let results;
    try {
      results = await this.deps.send(entries, this.closing ? { signal: this.closing.abort.signal } : {});
    } catch (err) {
      await this.callFailed(batch, err);
      return;
    }
    if (this.unreachable) this.log.info('bus reachable again; replaying spool', { spooled: this.deps.spool.events });
    this.unreachable = false;
    const { delivered, retry, dead } = sortResults(batch, results);
    if (delivered.length > 0) {
      this.lastPublishAt = this.deps.clock.now();
      for (const r of delivered) this.metrics.published(r.detailType, 1);
    }
    await this.deadLetter(dead);
    await this.settle([...delivered, ...dead.map((d) => d.record)]);
    if (retry.length === 0) {
      this.failures = 0;
      this.retryOnly = null;
      return;
    }
    this.failures = delivered.length > 0 ? 1 : this.failures + 1;
    if (this.failures >= this.settings.maxAttempts || this.closing) {
      this.retryOnly = null;
      await this.becomeUnreachable(`entries kept failing: ${results.map((r) => (r.ok ? 'ok' : r.code)).join(',')}`);
      return;
    }
    this.retryOnly = retry;
    this.retryAt = this.deps.clock.now() + backoffDelay(this.failures, this.settings.backoff, this.deps.random);
  }

  private async callFailed(batch: QueuedRecord[], err: unknown): Promise<void> {
    const { failure, code, status } = classifyCallError(err);
    this.failures++;
    this.log.warn('PutEvents failed', { code, status, attempt: this.failures, events: batch.length });
    if (failure === 'rejected' && this.failures >= this.settings.maxAttempts) {
      await this.deadLetter(
        batch.map((record) => ({ record, code, message: err instanceof Error ? err.message : String(err) })),
      );
      await this.settle(batch);
      this.failures = 0;
      this.retryOnly = null;
      return;
    }
    if (this.unreachable || this.closing || this.failures >= this.settings.maxAttempts) {
      await this.becomeUnreachable(code);
      return;
    }
    this.retryAt = this.deps.clock.now() + backoffDelay(this.failures, this.settings.backoff, this.deps.random);
  }

  /** Everything in memory goes to the spool; from now on one probe per interval. */
  private async becomeUnreachable(reason: string): Promise<void> {
    if (!this.unreachable) this.log.error('bus unreachable; spooling events', { reason, attempts: this.failures });
    this.unreachable = true;
    if (this.closing) this.closing.gaveUp = true;
    this.failures = 0;
    this.retryOnly = null;
    this.retryAt = this.deps.clock.now() + this.probeDelay();
    await this.spill();
  }

  /**
   * Probes are jittered (50-100% of the interval) so a fleet that lost the bus together does not
   * come back in lockstep, replaying all at once.
   */
  private probeDelay(): number {
    const half = this.settings.probeIntervalMs / 2;
    return Math.floor(half + this.deps.random() * half);
  }

  /** Moves the memory queue and inbox (oldest first) behind whatever the spool holds. */
  private async spill(): Promise<void> {
    const fromInbox = this.inbox.length;
    const records = [...this.queue, ...this.inbox.slice(0, fromInbox)];
    if (records.length === 0) return;
    await this.toSpool(records);
    this.queue = [];
    this.inbox.splice(0, fromInbox);
  }

  private async toSpool(records: QueuedRecord[]): Promise<void> {
    const outcome = await this.deps.spool.append(records);
    const droppedSeqs = new Set(outcome.dropped.map((d) => d.seq));
    const kept = records.filter((r) => !droppedSeqs.has(r.seq)).length;
    // In the spool now (fsynced): the journal need not keep them.
    this.unjournal(records.filter((r) => r.priority === 'critical' && !droppedSeqs.has(r.seq)).map((r) => r.seq));
    if (kept > 0) this.metrics.spooled(kept);
    for (const d of outcome.dropped) {
      this.metrics.dropped(d.priority, 1);
      this.log.warn('spool full; dropped event', { ...d });
    }
    // A dropped event must not be sent by a pending retry either.
    if (this.retryOnly && droppedSeqs.size > 0) {
      const left = this.retryOnly.filter((r) => !droppedSeqs.has(r.seq));
      this.retryOnly = left.length > 0 ? left : null;
    }
    this.updateSpoolGauges();
  }

  /** Removes delivered or dead-lettered records from wherever they wait. */
  private async settle(records: QueuedRecord[]): Promise<void> {
    if (records.length === 0) return;
    const seqs = new Set(records.map((r) => r.seq));
    this.queue = this.queue.filter((r) => !seqs.has(r.seq));
    await this.deps.spool.ack([...seqs]);
    this.unjournal(records.filter((r) => r.priority === 'critical').map((r) => r.seq));
    this.updateSpoolGauges();
  }

  private async deadLetter(entries: { record: QueuedRecord; code: string; message: string }[]): Promise<void> {
    if (entries.length === 0) return;
    await this.deps.deadLetter.write(entries, this.deps.clock.now());
    this.metrics.failed(entries.length);
    for (const e of entries)
      this.log.error('event dead-lettered', {
        eventId: e.record.eventId,
        detailType: e.record.detailType,
        code: e.code,
        message: e.message,
      });
  }

  private updateSpoolGauges(): void {
    this.metrics.spoolSize(this.deps.spool.bytes, this.deps.spool.events);
  }
}
