import * as z from 'zod';

/**
 * ECS system events and spot interruptions in the simulated region, written from Alibaba's documentation
 * (nothing of gpu-reflex's is imported):
 *
 * - System events (https://www.alibabacloud.com/help/en/ecs/user-guide/overview-of-system-events): ECS plans
 *   maintenance on an instance, publishes the event `Scheduled` with a `NotBefore` time, and carries it out at that
 *   time at the earliest: `Executing`, the instance restarts (`*.Reboot`) or is redeployed to another host
 *   (`*.Redeploy`: a restart too, seen from the instance), then `Executed`. DescribeInstanceHistoryEvents lists them
 *   (https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-describeinstancehistoryevents):
 *   without `InstanceEventCycleStatus.N` only events that are over (Avoided, Executed, Canceled, Failed).
 * - Spot interruption (https://www.alibabacloud.com/help/en/ecs/user-guide/query-the-interruption-events-of-
 *   preemptible-instances): the instance enters `OperationLocks` with `LockReason` `Recycling`, and is reclaimed
 *   about 5 minutes later (preemptible instances overview, https://www.alibabacloud.com/help/doc-detail/52088.htm).
 */
export const SYSTEM_EVENT_TYPES = [
  'SystemMaintenance.Reboot',
  'SystemMaintenance.Redeploy',
  'SystemFailure.Reboot',
  'SystemFailure.Redeploy',
  'InstanceFailure.Reboot',
] as const;

/** The lifecycle states of a system event (`EventCycleStatus`). */
export const EVENT_CYCLE_STATES = [
  'Scheduled',
  'Avoided',
  'Executing',
  'Executed',
  'Canceled',
  'Failed',
  'Inquiring',
] as const;
export type EventCycleState = (typeof EVENT_CYCLE_STATES)[number];

/** States DescribeInstanceHistoryEvents lists when the caller names none. */
export const OVER_STATES: readonly EventCycleState[] = ['Avoided', 'Executed', 'Canceled', 'Failed'];

/** How long a spot instance runs after its interruption notice (the docs' "about 5 minutes"). */
export const SPOT_RECLAIM_MS = 5 * 60_000;

/** The cloud file's scripted events: an instance is named by its node name (the fleet's) or its id. */
export const SystemEventSpec = z
  .object({
    node: z.string().min(1).optional(),
    instanceId: z.string().min(1).optional(),
    type: z.enum(SYSTEM_EVENT_TYPES),
    /** Seconds after the simulator starts that ECS publishes the event (default: at once). */
    publishSeconds: z.number().nonnegative().default(0),
    /** Seconds after the simulator starts of `NotBefore`: the earliest the event is carried out. */
    notBeforeSeconds: z.number().nonnegative(),
  })
  .strict()
  .refine((e) => (e.node === undefined) !== (e.instanceId === undefined), {
    message: 'name the instance by node or by instanceId (one of them)',
  })
  .refine((e) => e.notBeforeSeconds >= e.publishSeconds, { message: 'notBeforeSeconds must not precede publish' });

export const PreemptionSpec = z
  .object({
    node: z.string().min(1).optional(),
    instanceId: z.string().min(1).optional(),
    /** Seconds after the simulator starts that the interruption notice (lock `Recycling`) appears. */
    atSeconds: z.number().nonnegative(),
  })
  .strict()
  .refine((e) => (e.node === undefined) !== (e.instanceId === undefined), {
    message: 'name the instance by node or by instanceId (one of them)',
  });

export interface SimSystemEvent {
  id: string;
  instanceId: string;
  type: (typeof SYSTEM_EVENT_TYPES)[number];
  status: EventCycleState;
  publishedMs: number;
  notBeforeMs: number;
  finishedMs?: number;
}

const ecsTime = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

/** One event as DescribeInstanceHistoryEvents answers it (`InstanceSystemEventSet.InstanceSystemEventType[]`). */
export function eventView(e: SimSystemEvent): Record<string, unknown> {
  return {
    EventId: e.id,
    InstanceId: e.instanceId,
    ResourceType: 'instance',
    EventType: { Name: e.type },
    EventCycleStatus: { Name: e.status },
    EventPublishTime: ecsTime(e.publishedMs),
    NotBefore: ecsTime(e.notBeforeMs),
    ...(e.finishedMs !== undefined ? { EventFinishTime: ecsTime(e.finishedMs) } : {}),
    Reason: `simulated ${e.type}`,
  };
}
