/**
 * Publishing back to the bus: every decision and action becomes an event (Remediation, MIG
 * Layout Change, ...). Details are validated against the catalog before they leave.
 */
import { EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import { validateDetail } from '../../events/validate.ts';
import { TransientError } from './errors.ts';

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

function check(e: PublishedEvent): void {
  const r = validateDetail(e.detailType, e.detail);
  if (!r.ok) throw new Error(`publishing an invalid ${e.detailType} (a bug in what we built): ${r.problems.map((p) => `${p.path}: ${p.message}`).join('; ')}`);
}

export class EventBridgePublisher implements EventPublisher {
  constructor(private readonly busName: string, private readonly client = new EventBridgeClient({})) {}

  async publish(events: readonly PublishedEvent[]): Promise<void> {
    events.forEach(check);
    for (let i = 0; i < events.length; i += 10) {
      const batch = events.slice(i, i + 10);
      const out = await this.client
        .send(new PutEventsCommand({
          Entries: batch.map((e) => ({ EventBusName: this.busName, Source: e.source, DetailType: e.detailType, Detail: JSON.stringify(e.detail), Resources: e.resources ?? [] })),
        }))
        .catch((err: unknown) => {
          throw new TransientError('publishing events', { what: `bus ${this.busName}`, cause: err });
        });
      if (out.FailedEntryCount) {
        const codes = (out.Entries ?? []).flatMap((x) => (x.ErrorCode ? [x.ErrorCode] : []));
        throw new TransientError(`publishing events: ${out.FailedEntryCount} of ${batch.length} failed (${[...new Set(codes)].join(', ')})`, { what: `bus ${this.busName}` });
      }
    }
  }
}

/** Keeps what was published, in order (tests, dry runs, the local timeline). */
export class RecordingPublisher implements EventPublisher {
  readonly published: PublishedEvent[] = [];
  async publish(events: readonly PublishedEvent[]): Promise<void> {
    events.forEach(check);
    this.published.push(...events);
  }
}
