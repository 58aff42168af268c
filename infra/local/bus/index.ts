import { type Clock, ManualClock, systemClock } from './clock.ts';
import type { EventEnvelope } from './envelope.ts';
import { PutEventsIngest, type PutEventsRequestEntry, type PutEventsResponse } from './put-events.ts';
import { startPutEventsServer } from './server.ts';

/**
 * The local EventBridge: a PutEvents endpoint, the rules/schedules/routes of serverless.yml, and
 * in-process delivery to the handlers. One call starts it; `close()` stops everything.
 */
export interface LocalBusOptions {
  /** serverless.yml to read rules, schedules and HTTP routes from. Without it events are only recorded. */
  serverlessYml?: string;
  /** Defaults to the system clock; pass a ManualClock in tests and step it with `advance`. */
  clock?: Clock;
  /** JSON-lines file for dead-lettered deliveries (also kept in memory as `deadLetters`). */
  dlqPath?: string;
  /** A custom bus name accepted besides `default` and the buses serverless.yml declares. */
  busName?: string;
  region?: string;
  account?: string;
}

export interface LocalBus {
  /** PutEvents endpoint: `new EventBridgeClient({ endpoint: bus.url })` or AWS_ENDPOINT_URL_EVENTBRIDGE. */
  url: string;
  /** Every accepted event, in order. */
  readonly events: readonly EventEnvelope[];
  /** The in-process publish path: same checks and routing as HTTP. Request-level errors throw AwsRequestError. */
  put(entries: PutEventsRequestEntry[]): Promise<PutEventsResponse>;
  setDown(down: boolean): void;
  failNext(n: number, fault?: { code: 'InternalFailure' | 'ThrottlingException' }): void;
  failRequests(n: number, status?: number): void;
  close(): Promise<void>;
}

export async function startLocalBus(opts: LocalBusOptions = {}): Promise<LocalBus> {
  const clock = opts.clock ?? systemClock;
  const buses = new Set<string>(opts.busName ? [opts.busName] : []);
  const ingest = new PutEventsIngest(
    { account: opts.account ?? '000000000000', region: opts.region ?? 'us-east-1', busNames: () => buses, now: () => clock.now() },
    () => {},
  );
  const server = await startPutEventsServer(ingest);
  return {
    url: server.url,
    get events() {
      return ingest.events.map((e) => e.envelope);
    },
    put: async (entries) => ingest.put({ Entries: entries }),
    setDown: (down) => server.setDown(down),
    failNext: (n, fault) => ingest.failNext(n, fault),
    failRequests: (n, status) => server.failRequests(n, status),
    close: () => server.close(),
  };
}

export { ManualClock, systemClock, type Clock };
export { AwsRequestError } from './errors.ts';
export type { EventEnvelope } from './envelope.ts';
export type { PutEventsRequestEntry, PutEventsResponse } from './put-events.ts';
