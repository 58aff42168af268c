/**
 * The functions' rules on Alibaba EventBridge route exactly what they route on AWS (issue #35):
 * every pattern of events/patterns/ translated (events/alibaba-pattern.ts) and matched by the
 * simulated Alibaba EventBridge (infra/local/bus/alibaba-pattern.ts, written from Alibaba's docs)
 * against each catalog example as a CloudEvent, agrees with AWS's matching of the same event.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { toAlibabaPattern, toAlibabaPatterns, UnsupportedOnAlibabaError } from '../../events/alibaba-pattern.ts';
import { toCloudEvent } from '../../events/cloudevents.ts';
import type { EventEnvelope } from '../../events/envelope.ts';
import { matchesPattern } from '../../events/pattern.ts';
import { alibabaPatternMatches } from '../../infra/local/bus/alibaba-pattern.ts';

const ROOT = new URL('../../', import.meta.url).pathname;
const read = (p: string) => JSON.parse(readFileSync(join(ROOT, p), 'utf8')) as unknown;
const patterns = readdirSync(join(ROOT, 'events/patterns'))
  .filter((f) => f.endsWith('.json'))
  .map((f) => [f, read(`events/patterns/${f}`)] as const);
const examples = readdirSync(join(ROOT, 'events/catalog'))
  .filter((f) => f.endsWith('.example.json'))
  .map((f) => read(`events/catalog/${f}`) as EventEnvelope);
// The one pattern that looks inside the detail (gpu-action: owner remediate or none): both sides.
const action = examples.find((e) => e['detail-type'] === 'GPU Action Result')!;
const variants = [
  { ...action, detail: { ...action.detail, owner: 'remediate' } },
  { ...action, detail: { ...action.detail, owner: 'mig' } },
  // rewrite-quotas' second branch: a done unfence gives capacity back.
  { ...action, detail: { ...action.detail, action: 'unfence', state: 'done' } },
  { ...action, detail: { ...action.detail, action: 'unfence', state: 'failed' } },
  { ...action, detail: Object.fromEntries(Object.entries(action.detail).filter(([k]) => k !== 'owner')) },
];
const events = [...examples, ...variants];
const asCloudEvent = (e: EventEnvelope) =>
  toCloudEvent({ id: e.id, source: e.source, detailType: e['detail-type'], time: e.time, detail: e.detail }, 'b');

describe("the functions' rules on Alibaba EventBridge", () => {
  it.each(patterns)('%s routes on Alibaba exactly the events it routes on AWS', (_f, aws) => {
    const rules = toAlibabaPatterns(aws);
    const onAws = events.map((e) => matchesPattern(aws, e));
    expect(onAws.some(Boolean)).toBe(true);
    expect(events.map((e) => rules.some((r) => alibabaPatternMatches(r, asCloudEvent(e))))).toEqual(onAws);
  });

  it('gives a top-level $or one Alibaba rule per branch (rewrite-quotas: its functions, and done unfences)', () => {
    expect(toAlibabaPatterns(read('events/patterns/rewrite-quotas.json'))).toHaveLength(2);
  });

  it('matches on CloudEvents attributes: detail-type → type, detail → data', () => {
    expect(toAlibabaPattern(read('events/patterns/gpu-action.json'))).toEqual({
      source: ['gpu-reflex.node-agent'],
      type: ['GPU Action Result'],
      data: { owner: ['remediate', { exists: false }] },
    });
  });

  it.each([
    ['equals-ignore-case', { source: [{ 'equals-ignore-case': 'a' }] }, /no "equals-ignore-case" operator/],
    ['wildcard', { source: [{ wildcard: 'a*' }] }, /no "wildcard" operator/],
    ['$or', { detail: { $or: [{ a: ['x'] }, { b: ['y'] }] } }, /no "\$or"/],
    ['anything-but a suffix', { source: [{ 'anything-but': { suffix: 'x' } }] }, /takes a value, a list or \{prefix\}/],
    ['prefix ignoring case', { source: [{ prefix: { 'equals-ignore-case': 'a' } }] }, /plain string/],
    ['an IPv6 cidr', { detail: { ip: [{ cidr: '2001:db8::/32' }] } }, /IPv4 only/],
    ['an envelope field with no counterpart', { account: ['123456789012'] }, /only source, detail-type and detail/],
  ])('refuses %s, naming it, rather than route something else', (_what, aws, message) => {
    expect(() => toAlibabaPattern(aws)).toThrow(UnsupportedOnAlibabaError);
    expect(() => toAlibabaPattern(aws)).toThrow(message);
  });
});
