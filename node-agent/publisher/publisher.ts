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
 * What happens to a batch and to the records (send, retry, unreachable, spool, journal, dead letters) is
 * publisher-delivery.ts, which this pump extends; its interface, publisher-api.ts.
 *
 * Guarantees and their limits are listed in docs/node-agent-publisher.md.
 */
import { EventTooLargeError, MAX_CALL_BYTES, MAX_ENTRIES_PER_CALL, entrySize, takeBatch } from './batching.ts';
import {
  PublisherClosedError,
  type CloseReport,
  type PublisherDeps,
  type PublisherStatus,
  type PublishResult,
} from './publisher-api.ts';
import { PublisherDelivery } from './publisher-delivery.ts';
import type { PublisherSettings } from './publisher-settings.ts';
import { MalformedEventError, recordFromEvent, type OutgoingEvent, type QueuedRecord } from './types.ts';

export {
  PublisherClosedError,
  type CloseReport,
  type PublisherDeps,
  type PublisherStatus,
  type PublishResult,
} from './publisher-api.ts';

export class Publisher extends PublisherDelivery {
  private windowStart = 0;
  private nextSeq: number;
  /** Set when the final spill starts: from then on nothing more can be accepted. */
  private sealed = false;
  private closed = false;
  private wake: (() => void) | null = null;
  private idleWaiters: (() => void)[] = [];
  private readonly done: Promise<void>;

  constructor(deps: PublisherDeps, settings: PublisherSettings) {
    super(deps, settings);
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

  /**
   * Resolves once the write-ahead journal holds every critical event accepted so far (a kill then loses none): the
   * kernel-log cursor is saved only then (kmsg/cursor.ts).
   */
  journaledSoFar(): Promise<void> {
    return this.journaled;
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
}
