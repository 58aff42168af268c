import { existsSync, readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import {
  APPROVAL_DECIDED,
  CATALOG,
  EventEnvelopeSchema,
  GPU_HEALTH_CHANGED,
  DEVICE_PLUGIN_MISMATCH,
  GPU_INVENTORY,
  GPU_UTILIZATION_SUMMARY,
  GPU_XID_ERROR,
  SOURCES,
} from '../../../events/index.ts';
import { matchesPattern } from '../../../events/pattern.ts';
import { ManualClock, startLocalBus, type LocalBus } from './index.ts';
import { HandlerLoader } from './handler-loader.ts';
import { loadRoutingTable } from './rules.ts';

/** The repository's own serverless.yml is the local stack's routing table: it must load and route. */
const ROOT = new URL('../../../serverless.yml', import.meta.url).pathname;
const table = loadRoutingTable(ROOT, { region: 'us-east-1', account: '000000000000', env: {} });
const remediate = table.eventRules.find((r) => r.fn.key === 'remediate');

describe('serverless.yml at the repository root', () => {
  it('declares the gpu-reflex bus, the remediate rule with its retry policy and DLQ, and the sweep', () => {
    expect(table.service).toBe('gpu-reflex');
    expect(table.buses).toEqual(['gpu-reflex-dev']);
    expect(remediate).toMatchObject({
      busName: 'gpu-reflex-dev',
      retryPolicy: { maximumRetryAttempts: 8, maximumEventAgeSeconds: 3600 },
      deadLetterQueueArn: 'RemediateDlq.Arn',
    });
    expect(table.schedules.map((s) => [s.fn.key, s.schedule.expression])).toEqual([
      ['remediate-sweep', 'rate(1 minute)'],
      ['rebalance-mig', 'rate(1 minute)'],
      ['autoscale-pools', 'rate(1 minute)'],
      ['rewrite-quotas', 'rate(5 minutes)'],
      ['idle-gpus', 'rate(1 hour)'],
    ]);
    // The chat webhook: one route, the platform in the path; ANY, for its GET /chat/healthz (chatops/health.ts).
    expect(table.routes.map((r) => [r.method, r.path, r.fn.key])).toEqual([['ANY', '/chat/{platform}', 'chatops']]);
    expect(table.warnings).toEqual([]);
  });

  it.each(CATALOG.map((e) => [e.slug, e]))(
    'the remediate pattern routes the %s example exactly when it is an agent XID, health or device-plugin event',
    (slug, entry) => {
      const example: unknown = JSON.parse(
        readFileSync(new URL(`../../../events/catalog/${slug}.example.json`, import.meta.url), 'utf8'),
      );
      const wanted =
        entry.source === SOURCES.agent &&
        (entry.detailType === GPU_XID_ERROR ||
          entry.detailType === GPU_HEALTH_CHANGED ||
          entry.detailType === DEVICE_PLUGIN_MISMATCH);
      expect(matchesPattern(remediate?.pattern, example)).toBe(wanted);
    },
  );
});

describe('the remediate-approve rule', () => {
  const approve = table.eventRules.find((r) => r.fn.key === 'remediate-approve');
  it.each(CATALOG.map((e) => [e.slug, e]))(
    'routes the %s example exactly when it is an Approval Decided from chat (or the CLI)',
    (slug, entry) => {
      const example: unknown = JSON.parse(
        readFileSync(new URL(`../../../events/catalog/${slug}.example.json`, import.meta.url), 'utf8'),
      );
      expect(approve).toMatchObject({
        busName: 'gpu-reflex-dev',
        retryPolicy: { maximumRetryAttempts: 8, maximumEventAgeSeconds: 3600 },
        deadLetterQueueArn: 'RemediateApproveDlq.Arn',
      });
      expect(matchesPattern(approve?.pattern, example)).toBe(entry.detailType === APPROVAL_DECIDED);
    },
  );
});

describe('the rewrite-quotas rule', () => {
  const rule = table.eventRules.find((r) => r.fn.key === 'rewrite-quotas');
  // Capacity may have changed, or an idle GPU's loan started or ended (GPU Idle Allocation, docs/cost.md).
  const capacity = new Set(['Remediation', 'GPU Pool Scaled', 'MIG Layout Change', 'GPU Idle Allocation']);
  it.each(CATALOG.map((e) => [e.slug, e]))(
    'routes the %s example exactly when it says capacity may have changed',
    (slug, entry) => {
      const example: unknown = JSON.parse(
        readFileSync(new URL(`../../../events/catalog/${slug}.example.json`, import.meta.url), 'utf8'),
      );
      expect(rule).toMatchObject({
        busName: 'gpu-reflex-dev',
        retryPolicy: { maximumRetryAttempts: 2, maximumEventAgeSeconds: 600 },
      });
      expect(matchesPattern(rule?.pattern, example)).toBe(
        entry.source === SOURCES.functions && capacity.has(entry.detailType),
      );
    },
  );
  // Issue #30: an unfenced GPU is capacity back at once, not at the next 5-minute round.
  it.each([
    ['unfence', 'done', true],
    ['unfence', 'failed', false],
    ['fence', 'done', false],
    ['reset', 'done', false],
  ] as const)('routes a GPU Action Result %s %s: %s', (action, state, routed) => {
    const example = JSON.parse(
      readFileSync(new URL('../../../events/catalog/gpu-action-result.example.json', import.meta.url), 'utf8'),
    ) as { detail: Record<string, unknown> };
    const event = { ...example, detail: { ...example.detail, action, state } };
    expect(matchesPattern(rule?.pattern, event)).toBe(routed);
  });
});

describe('the label-nodes rule', () => {
  const rule = table.eventRules.find((r) => r.fn.key === 'label-nodes');
  it.each(CATALOG.map((e) => [e.slug, e]))(
    'routes the %s example exactly when it is an agent GPU Inventory',
    (slug, entry) => {
      const example: unknown = JSON.parse(
        readFileSync(new URL(`../../../events/catalog/${slug}.example.json`, import.meta.url), 'utf8'),
      );
      expect(rule).toMatchObject({
        busName: 'gpu-reflex-dev',
        retryPolicy: { maximumRetryAttempts: 4, maximumEventAgeSeconds: 900 },
      });
      expect(matchesPattern(rule?.pattern, example)).toBe(
        entry.source === SOURCES.agent && entry.detailType === GPU_INVENTORY,
      );
    },
  );
});

describe('the idle-gpus rule', () => {
  const rule = table.eventRules.find((r) => r.fn.key === 'idle-gpus');
  it.each(CATALOG.map((e) => [e.slug, e]))(
    'routes the %s example exactly when it is an agent GPU Utilization Summary',
    (slug, entry) => {
      const example: unknown = JSON.parse(
        readFileSync(new URL(`../../../events/catalog/${slug}.example.json`, import.meta.url), 'utf8'),
      );
      expect(rule).toMatchObject({
        busName: 'gpu-reflex-dev',
        retryPolicy: { maximumRetryAttempts: 2, maximumEventAgeSeconds: 600 },
      });
      expect(matchesPattern(rule?.pattern, example)).toBe(
        entry.source === SOURCES.agent && entry.detailType === GPU_UTILIZATION_SUMMARY,
      );
    },
  );
});

describe('the local bus on the root serverless.yml', () => {
  let bus: LocalBus | undefined;
  afterEach(async () => bus?.close());

  it('names an existing module with an exported function for every handler', async () => {
    const loader = new HandlerLoader();
    const present = table.functions.filter((f) => ['.ts', '.js'].some((ext) => existsSync(f.modulePath + ext)));
    for (const f of present) await expect(loader.load(f), `functions.${f.key}.handler`).resolves.toBeTypeOf('function');
    expect(present.map((f) => f.key)).toEqual(table.functions.map((f) => f.key));
  });

  it('accepts events on the gpu-reflex bus and builds envelopes the event catalog accepts', async () => {
    // Routed nowhere on purpose: delivering would run the real handlers against this machine's environment.
    bus = await startLocalBus({ serverlessYml: ROOT, clock: new ManualClock(), env: {} });
    const delivered: string[] = [];
    bus.on('delivered', ({ function: f }) => delivered.push(f));
    bus.on('failed', ({ function: f }) => delivered.push(f));
    await bus.put([
      {
        Source: 'gpu-reflex.node-agent',
        // No rule routes an NVSwitch SXid (GPU Utilization Summary goes to idle-gpus now).
        DetailType: 'NVSwitch SXid Error',
        Detail: '{"node":"gpu-node-1"}',
        EventBusName: 'gpu-reflex-dev',
      },
    ]);
    await bus.drain();
    expect(delivered).toEqual([]);
    expect(bus.events).toHaveLength(1);
    expect(EventEnvelopeSchema.safeParse(bus.events[0]).success).toBe(true);
  });
});
