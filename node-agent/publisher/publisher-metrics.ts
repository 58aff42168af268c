/**
 * The publisher's counters and gauges, behind a small port so the core does not depend on the
 * registry (tests can pass a recording fake or nothing at all).
 */
import type { Metrics } from '../metrics.ts';
import type { Priority } from './types.ts';

export interface PublisherMetrics {
  published(detailType: string, n: number): void;
  /** Permanent failures: rejected locally (too large) or dead-lettered. */
  failed(n: number): void;
  spooled(n: number): void;
  dropped(priority: Priority, n: number): void;
  spoolSize(bytes: number, events: number): void;
}

export const noMetrics: PublisherMetrics = { published() {}, failed() {}, spooled() {}, dropped() {}, spoolSize() {} };

/** Metric names, one place: dashboards and alerts refer to these. */
export const PUBLISHER_METRIC_NAMES = {
  published: 'gpu_reflex_events_published_total',
  failed: 'gpu_reflex_events_failed_total',
  spooled: 'gpu_reflex_events_spooled_total',
  dropped: 'gpu_reflex_events_dropped_total',
  spoolBytes: 'gpu_reflex_spool_bytes',
  spoolEvents: 'gpu_reflex_spool_events',
} as const;

export function registerPublisherMetrics(registry: Metrics): PublisherMetrics {
  const n = PUBLISHER_METRIC_NAMES;
  const published = registry.counter(n.published, 'Events the bus accepted, by detail-type.', ['detail_type']);
  const failed = registry.counter(
    n.failed,
    'Events failed for good: too large to send, or dead-lettered after a non-retryable error.',
  );
  const spooled = registry.counter(
    n.spooled,
    'Events written to the on-disk spool because the bus was unreachable or behind.',
  );
  const dropped = registry.counter(
    n.dropped,
    'Events dropped because the spool was full, by priority (critical is never dropped).',
    ['priority'],
  );
  const spoolBytes = registry.gauge(n.spoolBytes, 'Size of the spool file in bytes.');
  const spoolEvents = registry.gauge(n.spoolEvents, 'Events waiting in the spool.');
  return {
    published: (detailType, count) => published.inc({ detail_type: detailType }, count),
    failed: (count) => failed.inc({}, count),
    spooled: (count) => spooled.inc({}, count),
    dropped: (priority, count) => dropped.inc({ priority }, count),
    spoolSize(bytes, events) {
      spoolBytes.set(bytes);
      spoolEvents.set(events);
    },
  };
}
