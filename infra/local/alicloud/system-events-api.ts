/**
 * DescribeInstanceHistoryEvents as ECS serves it (ECS 2014-05-26 API reference,
 * https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-describeinstancehistoryevents):
 * `RegionId` required; `InstanceId` or `ResourceId.N` (1–100; ResourceId wins); `InstanceEventCycleStatus.N` (1–7)
 * or `EventCycleStatus`, and without either only events that are over; `InstanceEventType.N` or `EventType`;
 * `MaxResults` 10–100 (below 10 taken as 10, above 100 as 100) with `NextToken`.
 */
import { CloudError, type AliCloud } from './cloud.ts';
import { EVENT_CYCLE_STATES, OVER_STATES, eventView, type EventCycleState } from './system-events.ts';

function list(p: URLSearchParams, name: string, max: number): string[] {
  const out: string[] = [];
  for (let n = 1; p.has(`${name}.${n}`); n++) out.push(p.get(`${name}.${n}`)!);
  if (out.length > max)
    throw new CloudError(400, 'InvalidParameter', `${name}.N takes at most ${max} values (got ${out.length})`);
  return out;
}

export function describeSystemEvents(cloud: AliCloud, p: URLSearchParams, requestId: string): Record<string, unknown> {
  if (!p.get('RegionId')) throw new CloudError(400, 'MissingRegionId', 'RegionId is mandatory for this action.');
  const resources = list(p, 'ResourceId', 100);
  const instances = resources.length > 0 ? resources : p.get('InstanceId') ? [p.get('InstanceId')!] : [];
  const named = list(p, 'InstanceEventCycleStatus', 7);
  const one = p.get('EventCycleStatus');
  const states = named.length > 0 ? named : one ? [one] : [...OVER_STATES];
  const bad = states.filter((s) => !(EVENT_CYCLE_STATES as readonly string[]).includes(s));
  if (bad.length > 0)
    throw new CloudError(400, 'InvalidParameter', `The specified EventCycleStatus is not valid: ${bad.join(', ')}`);
  const types = list(p, 'InstanceEventType', 30);
  if (types.length === 0 && p.get('EventType')) types.push(p.get('EventType')!);
  const raw = Number(p.get('MaxResults') ?? 100);
  if (!Number.isInteger(raw))
    throw new CloudError(400, 'InvalidParameter', `MaxResults must be an integer (got ${p.get('MaxResults')})`);
  const size = Math.min(100, Math.max(10, raw));
  const all = cloud.systemEvents.filter(
    (e) =>
      (instances.length === 0 || instances.includes(e.instanceId)) &&
      states.includes(e.status as EventCycleState) &&
      (types.length === 0 || types.includes(e.type)),
  );
  const token = p.get('NextToken');
  let start = 0;
  if (token) {
    const m = /^ev-(\d+)$/.exec(Buffer.from(token, 'base64url').toString('utf8'));
    if (!m) throw new CloudError(400, 'InvalidNextToken', 'The specified NextToken is invalid.');
    start = Number(m[1]);
  }
  const items = all.slice(start, start + size);
  return {
    RequestId: requestId,
    TotalCount: all.length,
    ...(start + size < all.length ? { NextToken: Buffer.from(`ev-${start + size}`).toString('base64url') } : {}),
    InstanceSystemEventSet: { InstanceSystemEventType: items.map(eventView) },
  };
}
