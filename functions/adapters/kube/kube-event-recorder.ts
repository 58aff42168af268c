/**
 * Kubernetes Events for what gpu-reflex did, as real controllers record them: `kubectl get events`
 * and `kubectl describe node` then show a cordon, a taint, an eviction or a stuck drain beside
 * the kubelet's and the scheduler's own events. Written through events.k8s.io/v1 (the API the
 * current client-go recorder uses; the API server serves the same objects as core/v1 Events).
 *
 * Recording never fails the action it reports: an error is logged and swallowed, like a chat
 * notification. Node events follow the kubelet's convention (namespace `default`, regarding.uid =
 * the node name), which is what `kubectl describe node` searches for.
 */
import { V1MicroTime, type EventsV1Event } from '@kubernetes/client-node';
import type { EventsApi } from './api-methods.ts';
import type { Clock } from '../clock.ts';
import { currentClock } from '../clock.ts';
import { createLogger, type Logger } from '../logger.ts';
import type { EventRecorder, KubeEventNote, KubeEventRef } from './ports.ts';

export const REPORTING_CONTROLLER = 'gpu-reflex';
/** The API server refuses an events.k8s.io note longer than this. */
const MAX_NOTE_BYTES = 1024;

export interface KubeEventRecorderOptions {
  clock?: Clock;
  logger?: Logger;
  /** `reportingInstance`: which gpu-reflex process (e.g. the function name). */
  instance?: string;
}

function truncate(note: string): string {
  if (Buffer.byteLength(note) <= MAX_NOTE_BYTES) return note;
  let out = note.slice(0, MAX_NOTE_BYTES - 3);
  while (Buffer.byteLength(out) > MAX_NOTE_BYTES - 3) out = out.slice(0, -1);
  return `${out}...`;
}

export class KubeEventRecorder implements EventRecorder {
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly instance: string;
  private seq = 0;

  constructor(
    private readonly api: EventsApi,
    options: KubeEventRecorderOptions = {},
  ) {
    this.clock = options.clock ?? currentClock();
    this.logger = options.logger ?? createLogger({ service: 'gpu-reflex' });
    this.instance = options.instance ?? process.env.AWS_LAMBDA_FUNCTION_NAME ?? 'gpu-reflex';
  }

  // RBAC: events.k8s.io events create
  async record(regarding: KubeEventRef, event: KubeEventNote): Promise<void> {
    const now = this.clock.now();
    const namespace = regarding.namespace ?? 'default';
    // `<object>.<hex nanoseconds>` as client-go names events; the counter keeps two events of one
    // millisecond (a cordon and a taint in one patch) apart.
    const nanos = BigInt(now) * 1_000_000n + BigInt(this.seq++ % 1_000_000);
    const body: EventsV1Event = {
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      metadata: { name: `${regarding.name}.${nanos.toString(16)}`, namespace },
      eventTime: new V1MicroTime(now),
      reportingController: REPORTING_CONTROLLER,
      reportingInstance: this.instance,
      action: event.action,
      reason: event.reason,
      type: event.type,
      note: truncate(event.note),
      regarding: {
        apiVersion: 'v1',
        kind: regarding.kind,
        name: regarding.name,
        ...(regarding.namespace ? { namespace: regarding.namespace } : {}),
        uid: regarding.uid ?? (regarding.kind === 'Node' ? regarding.name : undefined),
      },
    };
    try {
      await this.api.createNamespacedEvent({ namespace, body });
    } catch (err) {
      this.logger.warn('recording event failed', {
        reason: event.reason,
        regarding: `${regarding.kind}/${regarding.name}`,
        error: err,
      });
    }
  }
}

/** Records nothing: for fakes and wiring without a cluster. */
export const noEvents: EventRecorder = { record: async () => undefined };
