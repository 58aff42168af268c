/**
 * What the publisher (publisher.ts) does with records: sends one batch and sorts its answers (delivered,
 * retried alone after backoff, dead-lettered), turns unreachable after repeated failures (everything
 * in memory to the spool, then one jittered probe per interval), and keeps them durable on the way:
 * the write-ahead journal for critical records, the spool, the dead letters. Publisher, its subclass,
 * is the pump that decides when.
 */
import { backoffDelay, classifyCallError, sortResults } from './retry-policy.ts';
import { noMetrics, type PublisherMetrics } from './publisher-metrics.ts';
import type { PublisherDeps } from './publisher-api.ts';
import type { PublisherSettings } from './publisher-settings.ts';
import { silentLog, toEntry, type PublisherLog, type QueuedRecord } from './types.ts';

export abstract class PublisherDelivery {
  protected readonly metrics: PublisherMetrics;
  protected readonly log: PublisherLog;
  protected inbox: QueuedRecord[] = [];
  protected queue: QueuedRecord[] = [];
  /** Failures of the current head batch; reset by any success. */
  protected failures = 0;
  protected retryAt = 0;
  /** After a partial failure: exactly the entries to send next. */
  protected retryOnly: QueuedRecord[] | null = null;
  protected unreachable = false;
  protected lastPublishAt: number | null = null;
  protected closing: { hit: boolean; gaveUp: boolean; abort: AbortController; cancelTimer: () => void } | null = null;

  /** Journal operations, one at a time, in publish order; sends wait for it (write-ahead). */
  protected journaled: Promise<void> = Promise.resolve();

  constructor(
    protected readonly deps: PublisherDeps,
    protected readonly settings: PublisherSettings,
  ) {
    this.metrics = deps.metrics ?? noMetrics;
    this.log = deps.log ?? silentLog;
  }

  /** Fsyncs a critical record to the journal at once, whatever the pump is doing (a hung call too). */
  protected writeAhead(record: QueuedRecord): void {
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
  protected unjournal(seqs: readonly number[]): void {
    const journal = this.deps.journal;
    if (!journal || seqs.length === 0) return;
    this.journaled = this.journaled
      .then(() => journal.ack(seqs))
      .catch((err: unknown) => this.log.warn('write-ahead journal ack failed', { error: String(err) }));
  }

  protected async sendBatch(batch: QueuedRecord[]): Promise<void> {
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

  protected async callFailed(batch: QueuedRecord[], err: unknown): Promise<void> {
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
  protected async becomeUnreachable(reason: string): Promise<void> {
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
  protected probeDelay(): number {
    const half = this.settings.probeIntervalMs / 2;
    return Math.floor(half + this.deps.random() * half);
  }

  /** Moves the memory queue and inbox (oldest first) behind whatever the spool holds. */
  protected async spill(): Promise<void> {
    const fromInbox = this.inbox.length;
    const records = [...this.queue, ...this.inbox.slice(0, fromInbox)];
    if (records.length === 0) return;
    await this.toSpool(records);
    this.queue = [];
    this.inbox.splice(0, fromInbox);
  }

  protected async toSpool(records: QueuedRecord[]): Promise<void> {
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
  protected async settle(records: QueuedRecord[]): Promise<void> {
    if (records.length === 0) return;
    const seqs = new Set(records.map((r) => r.seq));
    this.queue = this.queue.filter((r) => !seqs.has(r.seq));
    await this.deps.spool.ack([...seqs]);
    this.unjournal(records.filter((r) => r.priority === 'critical').map((r) => r.seq));
    this.updateSpoolGauges();
  }

  protected async deadLetter(entries: { record: QueuedRecord; code: string; message: string }[]): Promise<void> {
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

  protected updateSpoolGauges(): void {
    this.metrics.spoolSize(this.deps.spool.bytes, this.deps.spool.events);
  }
}
