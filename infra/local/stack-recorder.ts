import { DEFAULT_HISTORY_SIZE, Ring } from './bus/history.ts';
import type { StackBus } from './bus/alibaba-bus.ts';
import { EventTally, type DeliveryRecord, type StackReport } from './report.ts';
import { deliveryEntry, eventEntry, formatEntry, type TimelineEntry } from './timeline.ts';

/**
 * Records and prints what the stack observes: every event the bus accepted (in order, once),
 * every delivery attempt, failures and dead letters, and entries others emit (the cluster
 * observer, the scenario's steps). Times are scenario time (`sinceStart`).
 *
 * Causes print before their effects. A function changes the cluster while it runs and publishes
 * its Remediation (the cause, with its reason) only at the end, so cluster changes (`effect`) are
 * held until the delivery is reported, or until the stack's next step for changes no delivery
 * made (the scheduler, a scenario step's pods).
 */
export interface RecorderOptions {
  out: (line: string) => void;
  colour: boolean;
  sinceStart: () => number;
  /** Scenario time 0 on the bus's clock (epoch ms), for retry times. */
  startedAt: () => number;
  /** Pod UID → `ns/name` for event lines. */
  podName: (uid: string) => string | undefined;
  /** Lambda function name → serverless.yml key (`gpu-reflex-dev-remediate` → `remediate`). */
  keyOf: ReadonlyMap<string, string>;
  /** Events, deliveries and timeline entries kept for the report: the last N of each (default 10,000). */
  historySize?: number;
}

export class StackRecorder {
  private readonly entryRing: Ring<TimelineEntry>;
  private readonly eventRing: Ring<StackReport['events'][number]>;
  private readonly deliveryRing: Ring<DeliveryRecord>;
  /** Counts of everything, for the summary: the rings keep only the last N. */
  readonly tally = new EventTally();
  /** Events the bus accepted so far, as of the last flush (printed, or missed when its history overflowed first). */
  private seen = 0;
  /** Cluster changes waiting for their cause to be printed. */
  private held: TimelineEntry[] = [];
  private missed = 0;
  /** Each function's last no-change line (text and why), so a repeat is not printed again. */
  private readonly lastUnchanged = new Map<string, string>();
  /** Functions already reported as missing: said once, counted in the summary. */
  private readonly announced = new Set<string>();

  constructor(
    private readonly bus: Pick<StackBus, 'counts' | 'events' | 'on'>,
    private readonly o: RecorderOptions,
  ) {
    const size = o.historySize ?? DEFAULT_HISTORY_SIZE;
    this.entryRing = new Ring(size);
    this.eventRing = new Ring(size);
    this.deliveryRing = new Ring(size);
  }

  /** The last timeline entries, events and deliveries (copies, oldest first). */
  get entries(): TimelineEntry[] {
    return this.entryRing.toArray();
  }
  get events(): StackReport['events'] {
    return this.eventRing.toArray();
  }
  get deliveries(): DeliveryRecord[] {
    return this.deliveryRing.toArray();
  }

  /** How many each list left out; events the bus dropped before they were printed count too. */
  dropped(): Omit<StackReport['dropped'], 'deadLetters'> {
    return {
      events: this.eventRing.dropped + this.missed,
      deliveries: this.deliveryRing.dropped,
      timeline: this.entryRing.dropped,
    };
  }

  emit(e: Omit<TimelineEntry, 'atMs'>): void {
    this.print({ ...e, atMs: this.o.sinceStart() });
  }

  private print(entry: TimelineEntry): void {
    this.entryRing.push(entry);
    this.o.out(formatEntry(entry, this.o.colour));
  }

  /** A change observed in the cluster: printed after the events that caused it (see above). */
  effect(e: Omit<TimelineEntry, 'atMs'>): void {
    this.printEvents();
    this.held.push({ ...e, atMs: this.o.sinceStart() });
  }

  /** Prints the events accepted since the last call, then the cluster changes held back. */
  flushEvents(): void {
    this.printEvents();
    this.releaseEffects();
  }

  private releaseEffects(): void {
    const held = this.held;
    this.held = [];
    for (const e of held) this.print(e);
  }

  private printEvents(): void {
    const total = this.bus.counts.events;
    if (total === this.seen) return;
    // The bus keeps its last N events: the new ones are the tail of that list, less any it
    // already dropped (more than N accepted since the last flush), which are counted as missed.
    const kept = this.bus.events;
    const fresh = total - this.seen;
    const first = Math.max(0, kept.length - fresh);
    const missed = fresh - (kept.length - first);
    if (missed > 0) {
      this.missed += missed;
      this.emit({
        who: 'bus',
        kind: 'failure',
        what: '',
        text: `${missed} events not shown: more arrived at once than the bus keeps (history ${kept.length})`,
      });
    }
    for (const e of kept.slice(first)) {
      const at = this.o.sinceStart();
      const record = { atMs: at, detailType: e['detail-type'], source: e.source, detail: e.detail, event: e };
      this.eventRing.push(record);
      this.tally.addEvent(record);
      this.print(eventEntry(at, e, this.o.podName));
    }
    this.seen = total;
  }

  /** Subscribes to the bus's delivery reports; returns the unsubscribe function. */
  subscribe(): () => void {
    const fn = (name: string) => this.o.keyOf.get(name) ?? name;
    const offs = [
      this.bus.on('delivered', (d) => {
        this.printEvents();
        const at = this.o.sinceStart();
        this.record({ atMs: at, rule: d.rule, function: fn(d.function), attempt: d.attempt, ok: true });
        const unchanged = deliveryEntry(at, fn(d.function), d.result);
        // An idle schedule says so once, not every minute of a quiet hour: a line that repeats
        // the function's previous no-change line word for word is not printed again.
        const said = unchanged && `${unchanged.text}\n${unchanged.why ?? ''}`;
        if (unchanged && this.lastUnchanged.get(unchanged.who) !== said) this.print(unchanged);
        if (unchanged) this.lastUnchanged.set(unchanged.who, said!);
        else this.lastUnchanged.delete(fn(d.function));
        this.releaseEffects();
      }),
      this.bus.on('failed', (d) => {
        this.printEvents();
        const f = fn(d.function);
        this.record({
          atMs: this.o.sinceStart(),
          rule: d.rule,
          function: f,
          attempt: d.attempt,
          ok: false,
          errorName: d.error.name,
          error: d.error.message,
        });
        const missing = d.error.name === 'HandlerLoadError';
        if (!(missing && this.announced.has(f))) {
          this.announced.add(f);
          const retry =
            d.retryAt !== undefined ? ` (retry at ${((d.retryAt - this.o.startedAt()) / 1000).toFixed(1)}s)` : '';
          this.emit({
            who: f,
            kind: 'failure',
            what: '',
            text: missing
              ? `not available yet (${d.error.message}): the event was not acted on`
              : `failed: ${d.error.message}${retry}`,
          });
        }
        this.releaseEffects();
      }),
      this.bus.on('dead-lettered', (d) => {
        if (d.errorName !== 'HandlerLoadError')
          this.emit({
            who: fn(d.function),
            kind: 'failure',
            what: 'dead letter',
            text: `${d.reason} after ${d.attempts} attempts: ${d.errorMessage}`,
          });
      }),
    ];
    return () => offs.forEach((off) => off());
  }

  private record(d: DeliveryRecord): void {
    this.deliveryRing.push(d);
    this.tally.addDelivery(d);
  }
}
