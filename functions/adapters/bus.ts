/**
 * Publishing back to the bus: every decision and action becomes an event (Remediation, MIG
 * Layout Change, ...). Details are validated against the catalog before they leave. The port and
 * the recording publisher; the EventBridge one is bus-eventbridge.ts, which holds the AWS SDK
 * client and is loaded with `import()` by the wiring (lib/wiring.ts), not at a bundle's import.
 */
import { validateDetail } from '../../events/validate.ts';

export interface PublishedEvent {
  source: string;
  detailType: string;
  detail: Record<string, unknown>;
  resources?: string[];
}

/**
 * Port. `publish` resolves once EventBridge accepted every entry; it throws TransientError when
 * some were not (the caller's platform retry re-runs an idempotent handler, and consumers
 * deduplicate on `detail.eventId`). An invalid detail is our own bug: it throws a plain Error
 * (never BadInputError, which the handler would drop) before anything is sent.
 * IAM: events:PutEvents on the bus.
 */
export interface EventPublisher {
  publish(events: readonly PublishedEvent[]): Promise<void>;
}

/**
 * Throws a plain Error (our own bug, never bad input) when a detail fails its catalog schema. A
 * detail its builder made with parseDetail (events/validate.ts) was checked there and is not parsed again.
 */
export function checkPublished(e: PublishedEvent): void {
  const r = validateDetail(e.detailType, e.detail);
  if (!r.ok)
    throw new Error(
      `publishing an invalid ${e.detailType} (a bug in what we ` +
        `built): ${r.problems.map((p) => `${p.path}: ${p.message}`).join('; ')}`,
    );
}

/** Keeps what was published, in order (tests, dry runs, the local timeline). */
export class RecordingPublisher implements EventPublisher {
  readonly published: PublishedEvent[] = [];
  async publish(events: readonly PublishedEvent[]): Promise<void> {
    events.forEach(checkPublished);
    this.published.push(...events);
  }
}
