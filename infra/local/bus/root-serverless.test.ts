import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { CATALOG, EventEnvelopeSchema, GPU_HEALTH_CHANGED, GPU_XID_ERROR, SOURCES } from '../../../events/index.ts';
import { matchesPattern } from '../../../events/pattern.ts';
import { ManualClock, startLocalBus, type LocalBus } from './index.ts';
import { loadRoutingTable } from './rules.ts';

/** The repository's own serverless.yml is the local stack's routing table: it must load and route. */
const ROOT = new URL('../../../serverless.yml', import.meta.url).pathname;
const table = loadRoutingTable(ROOT, { region: 'us-east-1', account: '000000000000', env: {} });
const remediate = table.eventRules.find((r) => r.fn.key === 'remediate');

describe('serverless.yml at the repository root', () => {
  it('declares the gpu-reflex bus, the remediate rule with its retry policy and DLQ, the sweep and the chat route', () => {
    expect(table.service).toBe('gpu-reflex');
    expect(table.buses).toEqual(['gpu-reflex']);
    expect(remediate).toMatchObject({
      busName: 'gpu-reflex',
      retryPolicy: { maximumRetryAttempts: 8, maximumEventAgeSeconds: 3600 },
      deadLetterQueueArn: 'RemediateDlq.Arn',
    });
    expect(table.schedules.map((s) => [s.fn.key, s.schedule.expression])).toEqual([['remediate-sweep', 'rate(1 minute)']]);
    expect(table.routes.map((r) => [r.fn.key, r.routeKey])).toEqual([['chatops', 'POST /chat/{platform}']]);
    expect(table.warnings).toEqual([]);
  });

  it.each(CATALOG.map((e) => [e.slug, e]))('the remediate pattern routes the %s example exactly when it is an agent XID or health event', (slug, entry) => {
    const example: unknown = JSON.parse(readFileSync(new URL(`../../../events/catalog/${slug}.example.json`, import.meta.url), 'utf8'));
    const wanted = entry.source === SOURCES.agent && (entry.detailType === GPU_XID_ERROR || entry.detailType === GPU_HEALTH_CHANGED);
    expect(matchesPattern(remediate?.pattern, example)).toBe(wanted);
  });
});

describe('the local bus on the root serverless.yml', () => {
  let bus: LocalBus | undefined;
  afterEach(async () => bus?.close());

  it('starts although the handlers are not written yet, and reports their absence as delivery failures', async () => {
    bus = await startLocalBus({ serverlessYml: ROOT, clock: new ManualClock(), env: {} });
    await bus.put([{ Source: 'gpu-reflex.node-agent', DetailType: 'GPU XID Error', Detail: '{"xid":79}', EventBusName: 'gpu-reflex' }]);
    await bus.advance(60_000);
    const missing = bus.deadLetters.filter((d) => d.errorName === 'HandlerLoadError').map((d) => d.function);
    // Once the functions land, deliveries succeed and this list shrinks; the bus never crashes.
    expect(missing.every((f) => f === 'remediate' || f === 'remediate-sweep')).toBe(true);
    expect(bus.events).toHaveLength(1);
    // The envelope the bus builds is the one the event catalog describes.
    expect(EventEnvelopeSchema.safeParse(bus.events[0]).success).toBe(true);
  });
});
