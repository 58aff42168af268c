import { afterEach, describe, expect, it } from 'vitest';
import { matchesPattern } from '../../../events/pattern.ts';
import { ManualClock, startLocalBus, type LocalBus } from './index.ts';
import { loadRoutingTable } from './rules.ts';

/** The repository's own serverless.yml is the local stack's routing table: it must load and route. */
const ROOT = new URL('../../../serverless.yml', import.meta.url).pathname;
const table = loadRoutingTable(ROOT, { region: 'us-east-1', account: '000000000000', env: {} });
const remediate = table.eventRules.find((r) => r.fn.key === 'remediate');
const event = (source: string, detailType: string) => ({ version: '0', id: '1', source, 'detail-type': detailType, detail: {} });

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

  it.each([
    ['gpu-reflex.node-agent', 'GPU XID Error', true],
    ['gpu-reflex.node-agent', 'GPU Health Changed', true],
    ['gpu-reflex.node-agent', 'GPU Utilization Sampled', false],
    ['gpu-reflex.remediate', 'GPU XID Error', false],
  ])('the remediate pattern matches %s / %s: %s', (source, detailType, expected) => {
    expect(matchesPattern(remediate?.pattern, event(source, detailType))).toBe(expected);
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
  });
});
