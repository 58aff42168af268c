/**
 * Dry-run, chosen once at wiring time (STYLE.md: "one decorator around the ports"). The
 * Kubernetes ports are wrapped by `dryRunPorts` (reads pass, writes are recorded and answered
 * with what they would have returned); the side-effect publisher and the notifier record and log;
 * the report publisher still publishes, marking each report dry-run, because telling what would
 * have been done is the point of a dry run.
 */
import type { EventPublisher, PublishedEvent } from '../adapters/bus.ts';
import type { Notice, Notifier } from '../adapters/chat/notifier.ts';
import type { Logger } from '../adapters/logger.ts';

/**
 * The publisher of a dry run. A report — an event whose detail has a `dryRun` field (Remediation,
 * MIG Layout Change, GPU Pool Scaled, Quota Rewritten) — is still published, marked `dryRun: true`
 * with each step that acted reading `dry-run`. Any other event is a side effect (Approval
 * Requested asks a person to act): it is kept and logged, never sent.
 */
export class DryRunPublisher implements EventPublisher {
  readonly withheld: PublishedEvent[] = [];
  /**
   * `would`: a reflex's words for its report's reason in a dry run ("Now draining" → "Would drain",
   * remediate/core/words.ts wouldWords); the reason is published as the plan said it otherwise.
   */
  constructor(
    private readonly reports: EventPublisher,
    private readonly logger?: Logger,
    private readonly would: (reason: string) => string = (r) => r,
  ) {}

  async publish(events: readonly PublishedEvent[]): Promise<void> {
    const reports = events.filter(isReport).map((e) => markEvent(e, this.would));
    for (const e of events.filter((x) => !isReport(x))) {
      this.withheld.push(e);
      this.logger?.info('dry run: would publish', { detailType: e.detailType, eventId: e.detail.eventId });
    }
    if (reports.length > 0) await this.reports.publish(reports);
  }
}

const isReport = (e: PublishedEvent) => 'dryRun' in e.detail;

function markEvent(e: PublishedEvent, would: (reason: string) => string): PublishedEvent {
  const detail: Record<string, unknown> = { ...e.detail, dryRun: true };
  if (typeof e.detail.reason === 'string') detail.reason = would(e.detail.reason);
  const steps = e.detail.steps;
  if (Array.isArray(steps)) {
    detail.steps = steps.map((s: { result?: string }) =>
      s.result === 'done' || s.result === 'already' ? { ...s, result: 'dry-run' } : s,
    );
  }
  return { ...e, detail };
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
