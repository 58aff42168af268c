/**
 * One Function Compute 3.0 entry for a handler written for AWS (issue #35): FC hands a function the
 * event of whichever trigger fired, so a function with a schedule and a rule (rewrite-quotas), or
 * chat's webhook, takes them all through this one export. The event's own shape says which trigger
 * it came from (each documented in fc-trigger.ts and fc-http.ts):
 * - `version: "v1"` and `rawPath`: the HTTP trigger → API Gateway v2 handler;
 * - `triggerTime` and `triggerName`: the timer trigger → a schedule handler;
 * - anything else: EventBridge's CloudEvent (or a batch of them) → an EventBridge handler.
 * `npm run package -- --target alibaba` builds each function with this in front (scripts/build.js).
 */
import type { FcContext } from './fc-trigger.ts';
import { fcEventTrigger, parseFcEvent } from './fc-trigger.ts';
import { fcHttpTrigger, fcTimerTrigger } from './fc-http.ts';

type AnyHandler = (event: never, context: never) => Promise<unknown>;

export type TriggerKind = 'http' | 'timer' | 'eventbridge';

/** Which FC trigger delivered `event` (a Buffer or text of JSON, or already parsed). */
export function triggerKindOf(event: unknown): TriggerKind {
  let e: unknown;
  try {
    e = parseFcEvent(event);
  } catch {
    return 'eventbridge'; // its adapter drops non-JSON with the reason
  }
  if (e !== null && typeof e === 'object' && !Array.isArray(e)) {
    const o = e as Record<string, unknown>;
    if (o.version === 'v1' && typeof o.rawPath === 'string') return 'http';
    if (typeof o.triggerTime === 'string' && typeof o.triggerName === 'string') return 'timer';
  }
  return 'eventbridge';
}

export function fcEntry(handler: AnyHandler, now: () => number = Date.now) {
  const h = handler as never;
  const http = fcHttpTrigger(h, now);
  const timer = fcTimerTrigger(h, now);
  const events = fcEventTrigger(h, now);
  return async (event: unknown, context: FcContext): Promise<unknown> => {
    // Parsed once here; each adapter takes the parsed event as it is.
    let parsed: unknown;
    try {
      parsed = parseFcEvent(event);
    } catch {
      return events(event, context);
    }
    switch (triggerKindOf(parsed)) {
      case 'http':
        return http(parsed, context);
      case 'timer':
        return timer(parsed, context);
      default:
        return events(parsed, context);
    }
  };
}
