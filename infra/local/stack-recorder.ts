import type { LocalBus } from './bus/index.ts';
import type { DeliveryRecord, StackReport } from './report.ts';
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
}

export class StackRecorder {
  readonly entries: TimelineEntry[] = [];
  readonly events: StackReport['events'] = [];
  readonly deliveries: DeliveryRecord[] = [];
  private seen = 0;
  /** Cluster changes waiting for their cause to be printed. */
  private held: TimelineEntry[] = [];
  /** Functions already reported as missing: said once, counted in the summary. */
  private readonly announced = new Set<string>();

  constructor(
    private readonly bus: LocalBus,
    private readonly o: RecorderOptions,
  ) {}

  emit(e: Omit<TimelineEntry, 'atMs'>): void {
    this.print({ ...e, atMs: this.o.sinceStart() });
  }

  private print(entry: TimelineEntry): void {
    this.entries.push(entry);
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
    const all = this.bus.events;
    for (; this.seen < all.length; this.seen++) {
      const e = all[this.seen]!;
      const at = this.o.sinceStart();
      this.events.push({ atMs: at, detailType: e['detail-type'], source: e.source, detail: e.detail, event: e });
      this.print(eventEntry(at, e, this.o.podName));
    }
  }

  /** Subscribes to the bus's delivery reports; returns the unsubscribe function. */
  subscribe(): () => void {
    const fn = (name: string) => this.o.keyOf.get(name) ?? name;
    const offs = [
      this.bus.on('delivered', (d) => {
        this.printEvents();
        const at = this.o.sinceStart();
        this.deliveries.push({ atMs: at, rule: d.rule, function: fn(d.function), attempt: d.attempt, ok: true });
        const unchanged = deliveryEntry(at, fn(d.function), d.result);
        if (unchanged) this.print(unchanged);
        this.releaseEffects();
      }),
      this.bus.on('failed', (d) => {
        this.printEvents();
        const f = fn(d.function);
        this.deliveries.push({ atMs: this.o.sinceStart(), rule: d.rule, function: f, attempt: d.attempt, ok: false, errorName: d.error.name, error: d.error.message });
        const missing = d.error.name === 'HandlerLoadError';
        if (!(missing && this.announced.has(f))) {
          this.announced.add(f);
          const retry = d.retryAt !== undefined ? ` (retry at ${((d.retryAt - this.o.startedAt()) / 1000).toFixed(1)}s)` : '';
          this.emit({ who: f, kind: 'failure', what: '', text: missing ? `not available yet (${d.error.message}): the event was not acted on` : `failed: ${d.error.message}${retry}` });
        }
        this.releaseEffects();
      }),
      this.bus.on('dead-lettered', (d) => {
        if (d.errorName !== 'HandlerLoadError') this.emit({ who: fn(d.function), kind: 'failure', what: 'dead letter', text: `${d.reason} after ${d.attempts} attempts: ${d.errorMessage}` });
      }),
    ];
    return () => offs.forEach((off) => off());
  }
}
