/**
 * The functions' own numbers, as CloudWatch Embedded Metric Format (EMF) log lines: CloudWatch Logs
 * turns each line into metrics, with no API call, no IAM beyond the log group the function already
 * writes, and nothing to wait for (Specification: Embedded metric format,
 * https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html).
 *
 * One writer, one place: the handler wrapper (lib/handler.ts `metered`) opens an InvocationMetrics
 * per invocation, runs the function inside it, and writes one EMF line when the invocation ends,
 * whatever its outcome. What the function put on the bus is counted by the publisher decorator the
 * wiring puts around the bus (`meteredPublisher`), into the invocation it runs in (AsyncLocalStorage:
 * the embedded stack runs every function in one process, so no module variable could tell two
 * apart). Names below are public interface: docs/deploy.md#metrics lists them, the template's
 * alarms use them (serverless.yml), test/contract/metrics.test.ts keeps the three in step.
 *
 * Only where METRICS_NAMESPACE is set (the template sets `gpu-reflex/<stage>`): tests and the
 * embedded stack write no metric lines.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import * as z from 'zod';
import type { EventPublisher, PublishedEvent } from '../adapters/bus.ts';

/** Metric names (docs/deploy.md#metrics). Units are EMF's (the specification's `Unit` values). */
export const METRICS = {
  /** One per invocation; dimensions Function, and Function × Outcome. */
  invocations: { name: 'Invocations', unit: 'Count' },
  /** An invocation that threw (retried, then dead-lettered) or answered 5xx: Outcome retry or bug. */
  failures: { name: 'Failures', unit: 'Count' },
  /** Input dropped at the edge as bad (never retried). */
  dropped: { name: 'Dropped', unit: 'Count' },
  /** The invocation's time on the one clock (adapters/clock.ts), from the wrapper's first line to its last. */
  duration: { name: 'Duration', unit: 'Milliseconds' },
  /** Events this invocation put on the bus: its actions and reports; dimensions Function × DetailType. */
  published: { name: 'EventsPublished', unit: 'Count' },
  /** Remediation reports (not dry runs); dimensions Function × Action × Phase. */
  remediations: { name: 'Remediations', unit: 'Count' },
  /** A Remediation that acted (phase acted, partial, awaiting-repair): its trigger's observedAt → now. */
  timeToAct: { name: 'TimeToAct', unit: 'Milliseconds' },
  /** MTTR: a Remediation that restored a node or GPU, its trigger's observedAt → back in service. */
  timeToRestore: { name: 'TimeToRestore', unit: 'Milliseconds' },
} as const;

export type Outcome = 'done' | 'dropped' | 'already-done' | 'retry' | 'bug';
const FAILED: ReadonlySet<Outcome> = new Set(['retry', 'bug']);
const ACTED = new Set(['acted', 'partial', 'awaiting-repair']);

/** Where a line goes: stdout, one JSON object a line, as the logger writes (CloudWatch Logs reads both). */
export type MetricsSink = (line: string) => void;
const stdoutSink: MetricsSink = (line) => process.stdout.write(line + '\n');

export interface MetricsOptions {
  /** The CloudWatch namespace; absent: no metric line is written. */
  namespace?: string;
  sink?: MetricsSink;
  /** The one clock's now (adapters/clock.ts currentClock), for Timestamp and Duration. */
  now: () => number;
}

/** METRICS_NAMESPACE, parsed once when a handler is built (cold start); CloudWatch allows 1–255 characters. */
export function metricsNamespaceFromEnv(env: NodeJS.ProcessEnv = process.env): string | undefined {
  return z
    .string()
    .regex(/^[\w.\-/#:]{1,255}$/, 'METRICS_NAMESPACE: 1–255 of A-Z a-z 0-9 . - _ / # :')
    .optional()
    .parse(env.METRICS_NAMESPACE || undefined);
}

interface Value {
  metric: { name: string; unit: string };
  dims: Record<string, string>;
  value: number;
}

/** What one invocation measured; written once, as EMF, by `flush`. */
export class InvocationMetrics {
  private readonly values: Value[] = [];
  private readonly startedAt: number;
  constructor(
    readonly fn: string,
    private readonly opts: MetricsOptions,
  ) {
    this.startedAt = opts.now();
  }

  /** Counts what was put on the bus (the publisher decorator calls this, inside the invocation). */
  published(events: readonly PublishedEvent[]): void {
    const at = this.opts.now();
    for (const e of events) {
      this.add(METRICS.published, { DetailType: e.detailType }, 1);
      if (e.detailType !== 'Remediation' || e.detail.dryRun === true) continue;
      const d = e.detail as { action?: string; phase?: string; trigger?: { observedAt?: string } };
      const action = String(d.action ?? 'unknown');
      this.add(METRICS.remediations, { Action: action, Phase: String(d.phase ?? 'unknown') }, 1);
      const observed = Date.parse(d.trigger?.observedAt ?? '');
      if (!Number.isFinite(observed) || at < observed) continue;
      if (d.phase === 'restored') this.add(METRICS.timeToRestore, { Action: action }, at - observed);
      else if (ACTED.has(d.phase ?? '')) this.add(METRICS.timeToAct, { Action: action }, at - observed);
    }
  }

  private add(metric: Value['metric'], dims: Record<string, string>, value: number): void {
    this.values.push({ metric, dims, value });
  }

  /** The EMF documents for this invocation: one per dimension set (EMF keys values by member name). */
  documents(outcome: Outcome): Record<string, unknown>[] {
    const ended = this.opts.now();
    const base = { Function: this.fn };
    const docs = [
      emf(
        this.opts.namespace!,
        ended,
        { ...base, Outcome: outcome },
        [['Function'], ['Function', 'Outcome']],
        [
          [METRICS.invocations, 1],
          [METRICS.failures, FAILED.has(outcome) ? 1 : 0],
          [METRICS.dropped, outcome === 'dropped' ? 1 : 0],
          [METRICS.duration, Math.max(0, ended - this.startedAt)],
        ],
      ),
    ];
    // Values with the same metric and dimensions become one document with an array of values.
    const groups = new Map<string, Value[]>();
    for (const v of this.values) {
      const key = JSON.stringify([v.metric.name, Object.entries(v.dims)]);
      groups.set(key, [...(groups.get(key) ?? []), v]);
    }
    for (const vs of groups.values()) {
      const { metric, dims } = vs[0]!;
      const keys = Object.keys(dims);
      // EMF: at most 100 values in one metric's array; a storm's reports are split into several lines.
      for (let i = 0; i < vs.length; i += 100) {
        const chunk = vs.slice(i, i + 100).map((v) => v.value);
        docs.push(
          emf(
            this.opts.namespace!,
            ended,
            { ...base, ...dims },
            [['Function', ...keys]],
            [[metric, chunk.length === 1 ? chunk[0]! : chunk]],
          ),
        );
      }
    }
    return docs;
  }

  /** Writes this invocation's lines; never throws (a metric must not fail a remediation). */
  flush(outcome: Outcome): void {
    if (!this.opts.namespace) return;
    try {
      const sink = this.opts.sink ?? stdoutSink;
      for (const d of this.documents(outcome)) sink(JSON.stringify(d));
    } catch {
      // stdout closed: nothing else to tell it to.
    }
  }
}

/** One EMF document: the `_aws` metadata, the dimension values and the metric values as root members. */
function emf(
  namespace: string,
  timestamp: number,
  dimensions: Record<string, string>,
  sets: string[][],
  metrics: [{ name: string; unit: string }, number | number[]][],
): Record<string, unknown> {
  return {
    _aws: {
      Timestamp: timestamp,
      CloudWatchMetrics: [
        { Namespace: namespace, Dimensions: sets, Metrics: metrics.map(([m]) => ({ Name: m.name, Unit: m.unit })) },
      ],
    },
    ...dimensions,
    ...Object.fromEntries(metrics.map(([m, v]) => [m.name, v])),
  };
}

const scope = new AsyncLocalStorage<InvocationMetrics>();

/** Runs `fn` as the invocation `m` measures: what it publishes is counted there. */
export function measuring<T>(m: InvocationMetrics, fn: () => Promise<T>): Promise<T> {
  return scope.run(m, fn);
}

/**
 * Decorator: counts each accepted publish into the invocation it happens in (none outside one:
 * nothing counted). Counted after the bus accepted, so a publish that threw counts nothing.
 */
export function meteredPublisher(inner: EventPublisher): EventPublisher {
  return {
    async publish(events) {
      await inner.publish(events);
      scope.getStore()?.published(events);
    },
  };
}
