import { describe, expect, it } from 'vitest';
import type { Context } from 'aws-lambda';
import { TransientError } from '../adapters/errors.ts';
import remediationExample from '../../events/catalog/remediation.example.json' with { type: 'json' };
import { eventHandler, rawHttpHandler, scheduleHandler } from './handler.ts';
import { silentLogger } from '../adapters/logger.ts';
import { meteredPublisher, METRICS, metricsNamespaceFromEnv } from './metrics.ts';

/**
 * The EMF document rules, written again from AWS's specification (not from metrics.ts):
 * https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html
 *  - the line is one JSON object; `_aws` holds `Timestamp` (ms since epoch) and `CloudWatchMetrics`,
 *    an array of MetricDirectives;
 *  - a directive: `Namespace` (1–255 chars), `Dimensions` (an array of DimensionSets, each an array of
 *    at most 30 member names), `Metrics` (at most 100 MetricDefinitions: `Name`, optional `Unit` from
 *    CloudWatch's list, optional `StorageResolution` 1 or 60);
 *  - every dimension named is a root member whose value is a string (≤ 1024 chars);
 *  - every metric named is a root member whose value is a number or an array of at most 100 numbers.
 * Returns the problems (empty: valid).
 */
const UNITS = new Set(
  (
    'Seconds Microseconds Milliseconds Bytes Kilobytes Megabytes Gigabytes Terabytes Bits Kilobits Megabits ' +
    'Gigabits Terabits Percent Count Bytes/Second Kilobytes/Second Megabytes/Second Gigabytes/Second ' +
    'Terabytes/Second Bits/Second Kilobits/Second Megabits/Second Gigabits/Second Terabits/Second Count/Second None'
  ).split(' '),
);
function emfProblems(line: string): string[] {
  const p: string[] = [];
  let doc: Record<string, unknown>;
  try {
    doc = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return ['not JSON'];
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) return ['not a JSON object'];
  const aws = doc._aws as { Timestamp?: unknown; CloudWatchMetrics?: unknown } | undefined;
  if (!aws || typeof aws !== 'object') return ['no _aws object'];
  if (typeof aws.Timestamp !== 'number' || !Number.isInteger(aws.Timestamp)) p.push('_aws.Timestamp: not ms');
  if (!Array.isArray(aws.CloudWatchMetrics)) return [...p, '_aws.CloudWatchMetrics: not an array'];
  for (const d of aws.CloudWatchMetrics as Record<string, unknown>[]) {
    const ns = d.Namespace;
    if (typeof ns !== 'string' || ns.length < 1 || ns.length > 255) p.push(`Namespace: ${String(ns)}`);
    if (!Array.isArray(d.Dimensions)) p.push('Dimensions: not an array');
    for (const set of (d.Dimensions ?? []) as unknown[]) {
      if (!Array.isArray(set) || set.length > 30) p.push('DimensionSet: not an array of ≤ 30');
      for (const k of (set ?? []) as unknown[]) {
        const v = doc[String(k)];
        if (typeof v !== 'string' || v.length > 1024) p.push(`dimension ${String(k)}: no string member`);
      }
    }
    if (!Array.isArray(d.Metrics) || d.Metrics.length > 100) p.push('Metrics: not an array of ≤ 100');
    for (const m of (d.Metrics ?? []) as { Name?: unknown; Unit?: unknown }[]) {
      if (typeof m.Name !== 'string' || m.Name.length < 1) p.push('Metric Name missing');
      if (m.Unit !== undefined && !UNITS.has(String(m.Unit))) p.push(`Unit ${String(m.Unit)}`);
      const v = doc[String(m.Name)];
      const ok =
        typeof v === 'number' || (Array.isArray(v) && v.length <= 100 && v.every((x) => typeof x === 'number'));
      if (!ok) p.push(`metric ${String(m.Name)}: no number (or ≤ 100 numbers) member`);
    }
  }
  return p;
}

/** One metric's value(s) across lines, by its dimension values. */
function valuesOf(lines: string[], name: string, dims: Record<string, string> = {}): number[] {
  return lines
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((d) => name in d && Object.entries(dims).every(([k, v]) => d[k] === v))
    .flatMap((d) => d[name] as number | number[]);
}

const ctx = { awsRequestId: 'req-1' } as Context;
const event = (detailType: string, detail: unknown) => ({
  version: '0',
  id: 'e-1',
  'detail-type': detailType,
  source: 'gpu-reflex.node-agent',
  account: '123456789012',
  time: '2026-11-21T03:02:45Z',
  region: 'ap-southeast-1',
  resources: [],
  detail,
});

function setup(t0 = Date.parse('2026-11-21T03:02:46.000Z')) {
  let t = t0;
  const lines: string[] = [];
  // Counted whatever the bus checks (RecordingPublisher also validates against the catalog).
  const bus = meteredPublisher({ publish: async () => undefined });
  const metrics = { namespace: 'gpu-reflex/test', sink: (l: string) => lines.push(l), now: () => t };
  return { lines, bus, metrics, step: (ms: number) => (t += ms) };
}

describe('functions metrics (CloudWatch EMF)', () => {
  it('writes one valid EMF line per invocation with its outcome and duration, as the spec requires', async () => {
    const s = setup();
    const h = scheduleHandler({
      name: 'remediate-sweep',
      logger: silentLogger,
      metrics: s.metrics,
      handle: async () => void s.step(250),
    });
    await h({}, ctx);
    expect(s.lines).toHaveLength(1);
    expect(emfProblems(s.lines[0]!)).toEqual([]);
    const doc = JSON.parse(s.lines[0]!) as Record<string, unknown>;
    expect(doc).toMatchObject({ Function: 'remediate-sweep', Outcome: 'done', Invocations: 1, Failures: 0 });
    expect(doc.Duration).toBe(250);
    expect((doc._aws as { CloudWatchMetrics: { Namespace: string }[] }).CloudWatchMetrics[0]!.Namespace).toBe(
      'gpu-reflex/test',
    );
  });

  it('counts a failure that will be retried, and still writes the line when the handler throws', async () => {
    const s = setup();
    const h = scheduleHandler({
      name: 'autoscale-pools',
      logger: silentLogger,
      metrics: s.metrics,
      handle: async () => {
        throw new TransientError('listing nodes');
      },
    });
    await expect(h({}, ctx)).rejects.toThrow('listing nodes');
    expect(valuesOf(s.lines, 'Failures', { Outcome: 'retry' })).toEqual([1]);
  });

  it('counts a bad event as dropped, not as a failure', async () => {
    const s = setup();
    const h = eventHandler({
      name: 'remediate',
      detailTypes: ['GPU XID Error'],
      logger: silentLogger,
      metrics: s.metrics,
      handle: async () => undefined,
    });
    await h(event('GPU XID Error', { nope: 1 }) as never, ctx);
    expect(valuesOf(s.lines, 'Dropped', { Outcome: 'dropped' })).toEqual([1]);
    expect(valuesOf(s.lines, 'Failures')).toEqual([0]);
  });

  it('counts what the invocation published: remediations by action and phase, time to act, time to restore', async () => {
    const s = setup();
    const detail = remediationExample.detail; // observedAt 03:02:45.120
    const restored = { ...detail, phase: 'restored', eventId: detail.eventId.replace(/acted$/, 'restored') };
    const h = scheduleHandler({
      name: 'remediate',
      logger: silentLogger,
      metrics: s.metrics,
      handle: async () => {
        await s.bus.publish([{ source: 'gpu-reflex.functions', detailType: 'Remediation', detail }]);
        s.step(60_000);
        await s.bus.publish([{ source: 'gpu-reflex.functions', detailType: 'Remediation', detail: restored }]);
      },
    });
    await h({}, ctx);
    for (const l of s.lines) expect(emfProblems(l)).toEqual([]);
    expect(valuesOf(s.lines, 'EventsPublished', { DetailType: 'Remediation' })).toEqual([1, 1]);
    expect(valuesOf(s.lines, 'Remediations', { Action: 'drain-node', Phase: 'acted' })).toEqual([1]);
    expect(valuesOf(s.lines, 'TimeToAct', { Action: 'drain-node' })).toEqual([880]);
    expect(valuesOf(s.lines, 'TimeToRestore', { Action: 'drain-node' })).toEqual([60_880]);
  });

  it('does not count a dry run as a remediation, nor a publish the bus refused', async () => {
    const s = setup();
    const refusing = meteredPublisher({
      publish: async () => {
        throw new TransientError('PutEvents');
      },
    });
    const h = scheduleHandler({
      name: 'remediate',
      logger: silentLogger,
      metrics: s.metrics,
      handle: async () => {
        const dry = { ...remediationExample.detail, dryRun: true };
        await s.bus.publish([{ source: 'gpu-reflex.functions', detailType: 'Remediation', detail: dry }]);
        await refusing
          .publish([{ source: 'gpu-reflex.functions', detailType: 'Remediation', detail: remediationExample.detail }])
          .catch(() => undefined);
      },
    });
    await h({}, ctx);
    expect(valuesOf(s.lines, 'EventsPublished')).toEqual([1]);
    expect(valuesOf(s.lines, 'Remediations')).toEqual([]);
  });

  it('keeps two invocations running at once apart (the embedded stack runs every function in one process)', async () => {
    const s = setup();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const publishing = (name: string, wait: boolean) =>
      scheduleHandler({
        name,
        logger: silentLogger,
        metrics: s.metrics,
        handle: async () => {
          if (wait) await gate;
          await s.bus.publish([{ source: 'gpu-reflex.functions', detailType: 'Remediation', detail: {} }]);
        },
      });
    const a = publishing('a', true)({}, ctx);
    await publishing('b', false)({}, ctx);
    release();
    await a;
    expect(valuesOf(s.lines, 'EventsPublished', { Function: 'a' })).toEqual([1]);
    expect(valuesOf(s.lines, 'EventsPublished', { Function: 'b' })).toEqual([1]);
  });

  it('splits more than 100 values of one metric into lines of at most 100 (the spec’s limit)', async () => {
    const s = setup();
    const h = scheduleHandler({
      name: 'remediate',
      logger: silentLogger,
      metrics: s.metrics,
      handle: async () => {
        const many = Array.from({ length: 150 }, (_, i) => ({
          source: 'gpu-reflex.functions',
          detailType: 'Remediation',
          detail: { ...remediationExample.detail, eventId: `rem:${i}` },
        }));
        await s.bus.publish(many);
      },
    });
    await h({}, ctx);
    for (const l of s.lines) expect(emfProblems(l)).toEqual([]);
    expect(valuesOf(s.lines, 'TimeToAct')).toHaveLength(150);
  });

  it('answers of an HTTP handler give its outcome: 5xx a failure, 4xx dropped', async () => {
    const s = setup();
    const reply = (statusCode: number) =>
      rawHttpHandler({
        name: 'chatops',
        logger: silentLogger,
        metrics: s.metrics,
        handle: async () => ({ statusCode }),
      });
    await reply(401)({ body: '' } as never, ctx);
    await reply(200)({ body: '' } as never, ctx);
    expect(valuesOf(s.lines, 'Dropped', { Outcome: 'dropped' })).toEqual([1]);
    expect(valuesOf(s.lines, 'Invocations', { Outcome: 'done' })).toEqual([1]);
  });

  it('writes nothing where no namespace is configured (tests, the embedded stack)', async () => {
    const lines: string[] = [];
    const h = scheduleHandler({
      name: 'x',
      logger: silentLogger,
      metrics: { namespace: undefined, sink: (l) => lines.push(l) },
      handle: async () => 1,
    });
    await h({}, ctx);
    expect(lines).toEqual([]);
  });

  it('reads METRICS_NAMESPACE, refusing what CloudWatch would', () => {
    expect(metricsNamespaceFromEnv({ METRICS_NAMESPACE: 'gpu-reflex/prod' })).toBe('gpu-reflex/prod');
    expect(metricsNamespaceFromEnv({})).toBeUndefined();
    expect(() => metricsNamespaceFromEnv({ METRICS_NAMESPACE: 'a b' })).toThrow(/METRICS_NAMESPACE/);
  });

  it('names every metric once (the documented names)', () => {
    const names = Object.values(METRICS).map((m) => m.name);
    expect(new Set(names).size).toBe(names.length);
  });

  it('the spec checker itself refuses what the spec forbids', () => {
    expect(emfProblems('{"_aws":{"Timestamp":1,"CloudWatchMetrics":[]}}')).toEqual([]);
    const bad = {
      _aws: {
        Timestamp: 1,
        CloudWatchMetrics: [{ Namespace: 'n', Dimensions: [['F']], Metrics: [{ Name: 'M', Unit: 'Widgets' }] }],
      },
      M: 'x',
    };
    expect(emfProblems(JSON.stringify(bad))).toEqual([
      'dimension F: no string member',
      'Unit Widgets',
      'metric M: no number (or ≤ 100 numbers) member',
    ]);
  });
});
