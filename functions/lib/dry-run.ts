/**
 * Dry-run, chosen once at wiring time (STYLE.md: "one decorator around the ports"). The
 * Kubernetes ports are wrapped by `dryRunPorts` (reads pass, writes are recorded and answered
 * with what they would have returned); the side-effect publisher and the notifier record and log;
 * the report publisher still publishes, marking each report dry-run, because telling what would
 * have been done is the point of a dry run.
 */
import type { EventPublisher, PublishedEvent } from '../adapters/bus.ts';
import type { Notice, Notifier } from '../adapters/chat/notifier.ts';
import type { Logger } from './logger.ts';

/** Marks what it publishes as a dry run: `dryRun: true`, and steps that acted read `dry-run`. */
export function markingDryRun(inner: EventPublisher): EventPublisher {
  return { publish: (events) => inner.publish(events.map(markEvent)) };
}

function markEvent(e: PublishedEvent): PublishedEvent {
  if (!('dryRun' in e.detail)) return e;
  const detail: Record<string, unknown> = { ...e.detail, dryRun: true };
  const steps = e.detail.steps;
  if (Array.isArray(steps)) {
    detail.steps = steps.map((s: { result?: string }) => (s.result === 'done' || s.result === 'already' ? { ...s, result: 'dry-run' } : s));
  }
  return { ...e, detail };
}

/** Side-effect events (Approval Requested, …) are logged, never sent. */
export class DryRunPublisher implements EventPublisher {
  readonly published: PublishedEvent[] = [];
  constructor(private readonly logger?: Logger) {}
  async publish(events: readonly PublishedEvent[]): Promise<void> {
    this.published.push(...events);
    for (const e of events) this.logger?.info('dry run: would publish', { detailType: e.detailType, eventId: e.detail.eventId });
  }
}

/** Chat is logged, never sent. */
export class DryRunNotifier implements Notifier {
  readonly notices: Notice[] = [];
  constructor(private readonly logger?: Logger) {}
  async notify(notice: Notice): Promise<void> {
    this.notices.push(notice);
    this.logger?.info('dry run: would notify', { title: notice.title });
  }
}
