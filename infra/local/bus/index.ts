import { advanceThrough, type Clock, isSteppable, ManualClock, systemClock, TimerQueue } from './clock.ts';
import type { DeadLetter, DeliveryEvents } from './delivery-events.ts';
import type { EventEnvelope } from './envelope.ts';
import { startHttpApi, type HttpApiOptions, type HttpApiServer } from './http-api.ts';
import { PutEventsIngest, type PutEventsRequestEntry, type PutEventsResponse } from './put-events.ts';
import { Router, mulberry32 } from './router.ts';
import { loadRoutingTable, type RoutingTable } from './rules.ts';
import { Schedules } from './schedules.ts';
import { startPutEventsServer } from './server.ts';
import { RuleRegistry } from './rule-registry.ts';
import { controlPlane } from './control-plane.ts';

/**
 * The local EventBridge: a PutEvents endpoint, the rules/schedules/httpApi routes of
 * serverless.yml, and in-process delivery to the handlers with EventBridge-like retries.
 * One call starts it; `close()` stops everything.
 */
export interface LocalBusOptions {
  /** serverless.yml with the rules, schedules and HTTP routes. Without it events are only recorded. */
  serverlessYml?: string;
  /**
   * A steppable clock (this folder's ManualClock, or any clock with `advance(ms)`): time moves only
   * with `advance`, or by the caller followed by `drain()`. Anything else (default: the system
   * clock) runs in real time: due schedules and retries are polled every 200 ms.
   */
  clock?: Clock;
  /** JSON-lines file that dead-lettered deliveries are appended to (also kept as `deadLetters`). */
  dlqPath?: string;
  /** A custom bus accepted besides `default` and the buses serverless.yml declares or routes from. */
  busName?: string;
  region?: string;
  account?: string;
  /** Stage for `${sls:stage}` / `${opt:stage}`; defaults to provider.stage, then `dev`. */
  stage?: string;
  /** Environment for `${env:X}`; defaults to process.env. */
  env?: Record<string, string | undefined>;
  /** Seed for retry jitter, so runs are reproducible. */
  seed?: number;
  /**
   * Deliveries running at once, like concurrent Lambda invocations (default 1: one at a time in
   * arrival order, reproducible). Benchmarks of a storm set it to 20-50.
   */
  concurrency?: number;
  /** Listen address and ports; 0 (default) lets the OS pick. */
  host?: string;
  port?: number;
  httpPort?: number;
  /**
   * How many accepted events and dead letters `events` and `deadLetters` keep: the last N of each
   * (default 10,000). `counts` goes on counting past it, so memory stays bounded on a long run.
   */
  historySize?: number;
}

/** Totals since the bus started, kept in history or not. */
export interface BusCounts {
  events: number;
  eventsByDetailType: Record<string, number>;
  deadLetters: number;
}

export interface LocalBus {
  /** PutEvents endpoint: `new EventBridgeClient({ endpoint: bus.url })` or AWS_ENDPOINT_URL_EVENTBRIDGE. */
  url: string;
  /** Base URL of the httpApi routes; undefined without a serverless.yml. */
  httpUrl: string | undefined;
  /** The last `historySize` accepted events, in order (a copy). */
  readonly events: readonly EventEnvelope[];
  /** The last `historySize` dead-lettered deliveries, in order (the dlqPath file has them all). */
  readonly deadLetters: readonly DeadLetter[];
  /** Totals since the start: `counts.events - events.length` were dropped from the history. */
  readonly counts: BusCounts;
  /** The routing table read from serverless.yml, and what it holds that the bus does not serve. */
  table: RoutingTable | undefined;
  /**
   * The in-process publish path: same checks, routing and injected faults as HTTP. Request-level
   * errors (and failRequests) throw AwsRequestError; while setDown(true) it throws ECONNREFUSED.
   */
  put(entries: PutEventsRequestEntry[]): Promise<PutEventsResponse>;
  /** Moves a steppable clock forward by `ms`, firing schedules and retries at their times, delivering as it goes. */
  advance(ms: number): Promise<void>;
  /** Runs until quiet at the current time: queued deliveries and anything already due. */
  drain(): Promise<void>;
  /** Same as drain(): deliver everything that is due now, without moving the clock. */
  deliverNow(): Promise<void>;
  /** Resets every connection (and refuses `put`) until setDown(false). */
  setDown(down: boolean): void;
  failNext(n: number, fault?: { code: 'InternalFailure' | 'ThrottlingException' }): void;
  failRequests(n: number, status?: number): void;
  /** `delivered`, `failed`, `dead-lettered`, `scheduled` (see delivery-events.ts). */
  on<K extends keyof DeliveryEvents>(event: K, listener: (...args: DeliveryEvents[K]) => void): () => void;
  close(): Promise<void>;
}

export async function startLocalBus(opts: LocalBusOptions = {}): Promise<LocalBus> {
  const clock = opts.clock ?? systemClock;
  const region = opts.region ?? 'us-east-1';
  const account = opts.account ?? '000000000000';
  const table = opts.serverlessYml
    ? loadRoutingTable(opts.serverlessYml, {
        region,
        account,
        env: opts.env ?? process.env,
        ...(opts.stage ? { stage: opts.stage } : {}),
      })
    : undefined;
  const buses = new Set<string>([...(opts.busName ? [opts.busName] : []), ...(table?.buses ?? [])]);
  const timers = new TimerQueue();
  const router = new Router(table?.eventRules ?? [], {
    clock,
    timers,
    region,
    account,
    random: mulberry32(opts.seed ?? 1),
    ...(opts.concurrency !== undefined ? { concurrency: opts.concurrency } : {}),
    ...(opts.dlqPath ? { dlqPath: opts.dlqPath } : {}),
    ...(opts.historySize !== undefined ? { historySize: opts.historySize } : {}),
  });
  const ingest = new PutEventsIngest(
    {
      account,
      region,
      busNames: () => buses,
      now: () => clock.now(),
      ...(opts.historySize !== undefined ? { historySize: opts.historySize } : {}),
    },
    (e) => router.route(e),
  );
  // Every enabled scheduled rule fires on the clock, serverless.yml's and PutRule's alike (schedules.ts).
  const schedules = new Schedules({ clock, timers, router, region, account });
  const registry = new RuleRegistry(table, { region, account }, (rules) => {
    router.setRules(rules);
    schedules.sync(registry.schedules());
  });
  schedules.sync(registry.schedules());

  const host = opts.host ?? '127.0.0.1';
  const server = await startPutEventsServer(
    ingest,
    host,
    opts.port ?? 0,
    controlPlane(registry, () => buses, {
      region,
      account,
    }),
  );
  let http: HttpApiServer | undefined;
  if (table) {
    const onInvoke: HttpApiOptions['onInvoke'] = ({ routeKey, function: fn, event, at, statusCode, error }) => {
      const info = { rule: routeKey, function: fn, event, attempt: 1, at };
      if (error) router.report('failed', { ...info, error });
      else router.report('delivered', { ...info, result: { statusCode } });
    };
    // A taken httpPort must not leave the PutEvents server running behind the error.
    http = await startHttpApi(table.routes, { clock, region, account, onInvoke }, host, opts.httpPort ?? 0).catch(
      async (err: unknown) => {
        await server.close();
        throw err;
      },
    );
  }
  const ticker = isSteppable(clock) ? undefined : setInterval(() => timers.runDue(clock.now()), 200);
  ticker?.unref();

  const drain = async (): Promise<void> => {
    do await router.drain();
    while (timers.runDue(clock.now()) > 0);
  };

  return {
    url: server.url,
    httpUrl: http?.url,
    table,
    get events() {
      return ingest.events.map((e) => e.envelope);
    },
    get deadLetters() {
      return router.deadLetters;
    },
    get counts() {
      return {
        events: ingest.acceptedCount,
        eventsByDetailType: Object.fromEntries(ingest.countsByDetailType),
        deadLetters: router.deadLetterCount,
      };
    },
    // The in-process path sees the same injected faults as HTTP callers.
    put: async (entries) => {
      if (server.down)
        throw Object.assign(new Error('connect ECONNREFUSED: the local bus is down'), { code: 'ECONNREFUSED' });
      const injected = server.takeInjectedFailure();
      if (injected) throw injected;
      return ingest.put({ Entries: entries });
    },
    advance: (ms) => advanceThrough(clock, timers, drain, ms),
    drain,
    deliverNow: drain,
    setDown: (down) => server.setDown(down),
    failNext: (n, fault) => ingest.failNext(n, fault),
    failRequests: (n, status) => server.failRequests(n, status),
    on(event, listener) {
      router.on(event, listener as never);
      return () => router.off(event, listener as never);
    },
    async close() {
      if (ticker) clearInterval(ticker);
      timers.clear();
      // Let deliveries already running finish (handlers time out, so this ends); errors were the caller's to drain.
      await router.drain().catch(() => {});
      await Promise.all([server.close(), http?.close()]);
    },
  };
}

export { ManualClock, systemClock, type Clock };
export { AwsRequestError } from './errors.ts';
export { ServerlessConfigError } from './serverless-yaml.ts';
export { CronError, parseCron } from './cron.ts';
export type { DeadLetter, DeliveryEvents, DeliveryInfo } from './delivery-events.ts';
export type { EventEnvelope } from './envelope.ts';
export type { PutEventsRequestEntry, PutEventsResponse } from './put-events.ts';
export type { RoutingTable } from './rules.ts';
