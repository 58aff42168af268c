/**
 * Is this agent doing its job? `/healthz` (readiness) answers from `healthReport`: `ok`, or
 * `degraded` with every reason, so `kubectl get pods` shows a node whose faults are not reaching
 * remediation and the body says why. A degraded agent keeps running: its liveness is `/livez`,
 * which only asks whether the process answers (http.ts), because none of these reasons is cured by
 * a restart (a wedged driver stays wedged, a bus outage stays out, and the spool holds what waits),
 * and a kubelet killing it in a loop would lose its in-memory windows and its XID catch-up.
 *
 * Evidence, not time: an agent with nothing to send is healthy however long it has been quiet;
 * what degrades it is events waiting while nothing is delivered.
 */
import type { Metrics } from './metrics.ts';

/** What other parts of the agent report about themselves. */
export class AgentHealth {
  private nvml: { healthy: boolean; reason?: string } = { healthy: true };

  setNvmlHealthy(healthy: boolean, reason?: string): void {
    this.nvml = reason === undefined ? { healthy } : { healthy, reason };
  }

  get nvmlHealthy(): boolean {
    return this.nvml.healthy;
  }

  get nvmlReason(): string | undefined {
    return this.nvml.reason;
  }
}

/** The publisher's view (publisher.ts `status()`); absent fields: nothing known of them (--dry-run prints). */
export interface DeliveryStatus {
  /** When the bus last accepted an event (the agent's clock, ms); null: never since the start. */
  lastPublishAt: number | null;
  spooledEvents: number;
  /** Events in memory, not yet sent. */
  queued?: number;
  /** False once PutEvents kept failing: events go to the spool until a send succeeds. */
  busReachable?: boolean;
}

export type DegradedReason = 'nvml' | 'delivery-failing' | 'delivery-stalled';
export const DEGRADED_REASONS: readonly DegradedReason[] = ['nvml', 'delivery-failing', 'delivery-stalled'];

export interface HealthReport {
  status: 'ok' | 'degraded';
  /** One line per reason, the reason's key first: `nvml: …`. Empty when ok. */
  reasons: string[];
  degraded: DegradedReason[];
}

export interface HealthInputs {
  nvml: Pick<AgentHealth, 'nvmlHealthy' | 'nvmlReason'>;
  delivery: DeliveryStatus;
  now: number;
  /** When the agent started (the clock's ms): "nothing delivered since" counts from here before any delivery. */
  startedAt: number;
  /** Events waiting this long with no delivery: degraded (DELIVERY_STALL_MINUTES). */
  stallMs: number;
}

export function healthReport(h: HealthInputs): HealthReport {
  const out: { key: DegradedReason; line: string }[] = [];
  if (!h.nvml.nvmlHealthy) out.push({ key: 'nvml', line: `nvml: ${h.nvml.nvmlReason ?? 'NVML calls fail'}` });
  const d = h.delivery;
  const waiting = d.spooledEvents + (d.queued ?? 0);
  if (d.busReachable === false)
    out.push({
      key: 'delivery-failing',
      line: `delivery-failing: PutEvents keeps failing; ${waiting} events wait in the spool (the log says why)`,
    });
  const since = d.lastPublishAt ?? h.startedAt;
  if (waiting > 0 && h.now - since >= h.stallMs) {
    const minutes = Math.floor((h.now - since) / 60_000);
    out.push({
      key: 'delivery-stalled',
      line:
        `delivery-stalled: ${waiting} events waiting, nothing delivered for ${minutes} min ` +
        (d.lastPublishAt === null ? '(none since the start)' : `(last at ${new Date(d.lastPublishAt).toISOString()})`),
    });
  }
  return {
    status: out.length === 0 ? 'ok' : 'degraded',
    reasons: out.map((o) => o.line),
    degraded: out.map((o) => o.key),
  };
}

export const HEALTH_METRIC_NAMES = { degraded: 'gpu_reflex_agent_degraded' } as const;

/** The gauge `/metrics` shows: 1 per reason now degrading the agent, 0 for the others (set at each scrape). */
export function registerHealthMetric(registry: Metrics): (r: HealthReport) => void {
  const g = registry.gauge(
    HEALTH_METRIC_NAMES.degraded,
    'Whether the agent is degraded, by reason (nvml, delivery-failing, delivery-stalled): 1 degraded, 0 not.',
    ['reason'],
  );
  return (r) => {
    for (const reason of DEGRADED_REASONS) g.set({ reason }, r.degraded.includes(reason) ? 1 : 0);
  };
}
