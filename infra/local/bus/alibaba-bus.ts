/**
 * The embedded stack's Alibaba target (`gpu-reflex local --target alibaba`, issue #35): the same
 * functions, reached the way Alibaba Cloud reaches them. Agents and functions publish CloudEvents to
 * the simulated Alibaba EventBridge data plane (alibaba-eventbridge.ts: the signature, nonce, date,
 * limits and error codes Alibaba's client meets); the ROS template's rules (Alibaba's pattern
 * syntax, alibaba-pattern.ts) route each event to the functions they target; each function is invoked
 * as Function Compute 3.0 invokes it — the CloudEvent as a Buffer of JSON (EventBridge trigger,
 * eventSchema CloudEvents), `{triggerTime, triggerName, payload}` from its timer triggers, FC's HTTP
 * event from its HTTP trigger — through the entry its code package puts in front of the handler.
 *
 * It answers the embedded stack as the AWS bus does (StackBus: the same delivery reports, history,
 * `advance` and `drain`), so the stack, its timeline and its report are the same code for both targets.
 *
 * FC's asynchronous invocation (the rules' targets say `InvocationType: Async`; FC 3.0 "Error
 * handling", https://www.alibabacloud.com/help/en/functioncompute/fc-3-0/user-guide/error-handling):
 * a function error is retried up to the function's `MaxAsyncRetryAttempts` while the event is younger
 * than `MaxAsyncEventAgeInSeconds`, then goes to its on-failure destination (none, or a timer's
 * invocation: dropped, https://www.alibabacloud.com/help/doc-detail/181866.htm). The
 * waits between retries are not documented: the AWS bus's backoff is used (router.ts backoffMs).
 */
import { appendFileSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { randomUUID } from 'node:crypto';
import { startHttpTrigger, type FcHttpResult, type HttpTrigger } from './alibaba-http-trigger.ts';
import { alibabaPatternMatches } from './alibaba-pattern.ts';
import { startAlibabaEventBridge } from './alibaba-eventbridge.ts';
import { readAlibabaTemplate, type RosFunction } from './alibaba-ros.ts';
import { advanceThrough, type Clock, isSteppable, systemClock, TimerQueue } from './clock.ts';
import type { DeadLetter, DeliveryEvents } from './delivery-events.ts';
import { isoSeconds, type EventEnvelope } from './envelope.ts';
import { envelopeOf, type FcContext } from './alibaba-fc.ts';
import { HandlerLoadError, HandlerLoader, invoke, type LambdaHandler } from './handler-loader.ts';
import { DEFAULT_HISTORY_SIZE, Ring } from './history.ts';
import type { BusCounts, LocalBus } from './index.ts';
import { backoffMs, mulberry32 } from './router.ts';
import { loadRoutingTable, type FunctionDef } from './rules.ts';
import { EventEmitter } from 'node:events';

/** What the embedded stack needs of a bus, AWS or Alibaba. */
export type StackBus = Pick<
  LocalBus,
  'url' | 'httpUrl' | 'events' | 'deadLetters' | 'counts' | 'table' | 'advance' | 'drain' | 'on' | 'close'
>;

export interface AlibabaLocalBusOptions {
  /** The ROS template (what `npm run package -- --target alibaba` writes). */
  template: Record<string, unknown>;
  /** Values for the template's parameters (EventBusName, …); the others take their Default. */
  parameters?: Record<string, string>;
  /** serverless.yml: code package `<name>.zip` holds its function `<name>`'s handler. */
  serverlessYml: string;
  /** What each code package puts in front of its handler (the package's `index.handler`). */
  entry: (handler: LambdaHandler) => LambdaHandler;
  /**
   * AccessKey id → secret the bus accepts: the functions' and agents' identities. Read at each call,
   * so a caller may add the key of a service started later (one RAM identity for every service).
   */
  accessKeys: Record<string, string>;
  clock?: Clock;
  dlqPath?: string;
  accountId?: string;
  regionId?: string;
  historySize?: number;
  seed?: number;
}

export interface AlibabaLocalBus extends StackBus {
  /** The data-plane endpoint, `host:port` (ALIBABA_EVENTBRIDGE_ENDPOINT; protocol http). */
  endpoint: string;
}

interface Job {
  fn: RosFunction;
  rule: string;
  /** What FC hands the function (before it is made a Buffer). */
  payload: unknown;
  /** The event for the history and reports. */
  event: unknown;
  attempt: number;
  firstAt: number;
  /** Invoked by a timer trigger: FC sends no such failure to a destination (doc-detail/181866). */
  timer?: boolean;
}

export async function startAlibabaLocalBus(o: AlibabaLocalBusOptions): Promise<AlibabaLocalBus> {
  const clock = o.clock ?? systemClock;
  const regionId = o.regionId ?? 'cn-hangzhou';
  const accountId = o.accountId ?? '1234567890123456';
  const deployment = readAlibabaTemplate(o.template, {
    ...(o.parameters ? { parameters: o.parameters } : {}),
    regionId,
    accountId,
  });
  const table = loadRoutingTable(o.serverlessYml, { region: regionId, account: accountId, env: process.env });
  const byPackage = new Map(table.functions.map((f) => [f.key, f]));
  const defOf = (fn: RosFunction): FunctionDef => {
    const def = byPackage.get(fn.package);
    if (!def) throw new HandlerLoadError(`function ${fn.name}: no package ${fn.package} in serverless.yml`);
    return def;
  };
  const loader = new HandlerLoader();
  const wrapped = new Map<string, LambdaHandler>();
  const entryOf = async (fn: RosFunction): Promise<LambdaHandler> => {
    const hit = wrapped.get(fn.name);
    if (hit) return hit;
    const h = o.entry(await loader.load(defOf(fn)));
    wrapped.set(fn.name, h);
    return h;
  };
  const emitter = new EventEmitter<DeliveryEvents>();
  let pendingError: unknown;
  const report = <K extends keyof DeliveryEvents>(name: K, ...args: DeliveryEvents[K]) => {
    try {
      (emitter.emit as (n: string, ...a: unknown[]) => boolean)(name, ...args);
    } catch (err) {
      pendingError ??= err;
    }
  };
  const historySize = o.historySize ?? DEFAULT_HISTORY_SIZE;
  const events = new Ring<EventEnvelope>(historySize);
  const letters = new Ring<DeadLetter>(historySize);
  const byType = new Map<string, number>();
  const timers = new TimerQueue();
  const random = mulberry32(o.seed ?? 1);
  if (o.dlqPath) mkdirSync(dirname(o.dlqPath), { recursive: true });

  // ---- FC's async invocations, one at a time in arrival order (as the AWS bus, for a readable timeline)
  const queue: Job[] = [];
  let worker: Promise<void> | undefined;
  const context = (fn: RosFunction): FcContext => {
    const keyId = Object.keys(o.accessKeys)[0] ?? '';
    return {
      requestId: randomUUID(),
      function: { name: fn.name, handler: 'index.handler', memorySize: fn.memorySize, timeout: fn.timeoutSeconds },
      region: regionId,
      accountId,
      credentials: { accessKeyId: keyId, accessKeySecret: o.accessKeys[keyId] ?? '', securityToken: '' },
    };
  };
  const deliver = async (job: Job): Promise<void> => {
    const at = clock.now();
    const def = byPackage.get(job.fn.package);
    const info = { rule: job.rule, function: def?.name ?? job.fn.name, event: job.event, attempt: job.attempt, at };
    let outcome: { ok: true; result: unknown } | { ok: false; error: Error };
    try {
      const h = await entryOf(job.fn);
      const payload = Buffer.from(JSON.stringify(job.payload));
      outcome = { ok: true, result: await invoke(h, payload, context(job.fn) as never, job.fn.timeoutSeconds) };
    } catch (raw) {
      outcome = { ok: false, error: raw instanceof Error ? raw : new Error(String(raw)) };
    }
    if (outcome.ok) return report('delivered', { ...info, result: outcome.result });
    const { error } = outcome;
    const retryAt = at + backoffMs(job.attempt, random);
    let reason: DeadLetter['reason'] | undefined;
    if (error instanceof HandlerLoadError) reason = 'not-retryable';
    else if (job.attempt > job.fn.maxAsyncRetryAttempts) reason = 'retries-exhausted';
    else if (retryAt - job.firstAt > job.fn.maxAsyncEventAgeInSeconds * 1000) reason = 'maximum-event-age';
    if (!reason) {
      timers.add(retryAt, () => push({ ...job, attempt: job.attempt + 1 }));
      return report('failed', { ...info, error, retryAt });
    }
    report('failed', { ...info, error });
    const letter: DeadLetter = {
      time: isoSeconds(clock.now()),
      rule: job.rule,
      function: info.function,
      deadLetterQueueArn: job.timer ? null : (job.fn.onFailure ?? null),
      reason,
      errorName: error.name,
      errorMessage: error.message,
      attempts: job.attempt,
      event: job.event,
    };
    letters.push(letter);
    if (o.dlqPath) appendFileSync(o.dlqPath, JSON.stringify(letter) + '\n');
    report('dead-lettered', letter);
  };
  const pump = async () => {
    await Promise.resolve(); // the PutEvents answer goes out before the delivery starts
    for (let job = queue.shift(); job; job = queue.shift()) await deliver(job).catch((e) => (pendingError ??= e));
  };
  const push = (job: Job) => {
    queue.push(job);
    worker ??= pump().finally(() => (worker = undefined));
  };
  const fnOf = (name: string) => deployment.functions.get(name)!;

  // ---- the data plane: accepted CloudEvents routed by the template's rules
  const dataPlane = await startAlibabaEventBridge({
    accessKeys: o.accessKeys,
    buses: [...new Set(deployment.rules.map((r) => r.bus))],
    accountId,
    regionId,
    eventNow: () => clock.now(),
    route(ce) {
      const envelope = envelopeOf(ce);
      events.push(envelope);
      byType.set(envelope['detail-type'], (byType.get(envelope['detail-type']) ?? 0) + 1);
      for (const rule of deployment.rules)
        if (rule.enabled && rule.bus === ce['aliyuneventbusname'] && alibabaPatternMatches(rule.pattern, ce))
          for (const f of rule.functions)
            push({ fn: fnOf(f), rule: rule.name, payload: ce, event: envelope, attempt: 1, firstAt: clock.now() });
    },
  });

  // ---- timer triggers: `@every N` from the moment the trigger is created (the bus's start)
  const start = clock.now();
  for (const t of deployment.timers) {
    const arm = (k: number) =>
      timers.add(start + k * t.everyMs, () => {
        const at = start + k * t.everyMs;
        const payload = { triggerTime: isoSeconds(at), triggerName: t.name, payload: t.payload };
        const fn = fnOf(t.function);
        report('scheduled', { rule: t.name, function: byPackage.get(fn.package)?.name ?? fn.name, event: payload, at });
        push({ fn, rule: t.name, payload, event: payload, attempt: 1, firstAt: at, timer: true });
        arm(k + 1);
      });
    arm(1);
  }

  // ---- HTTP triggers: FC's HTTP event from each request (alibaba-http-trigger.ts)
  const httpTriggers: HttpTrigger[] = [];
  for (const t of deployment.http) {
    const fn = fnOf(t.function);
    const functionKey = byPackage.get(fn.package)?.name ?? fn.name;
    const trigger = await startHttpTrigger({
      methods: t.methods,
      accountId,
      functionName: fn.name,
      now: () => clock.now(),
      async call(event, at) {
        const info = { rule: t.name, function: functionKey, event, attempt: 1, at };
        try {
          const h = await entryOf(fn);
          const payload = Buffer.from(JSON.stringify(event));
          const out = (await invoke(h, payload, context(fn) as never, fn.timeoutSeconds)) as FcHttpResult;
          report('delivered', { ...info, result: out });
          return out;
        } catch (err) {
          report('failed', { ...info, error: err instanceof Error ? err : new Error(String(err)) });
          throw err;
        }
      },
    });
    httpTriggers.push(trigger);
  }
  const httpUrl = httpTriggers[0]?.url;

  const ticker = isSteppable(clock) ? undefined : setInterval(() => timers.runDue(clock.now()), 200);
  ticker?.unref();
  const drain = async (): Promise<void> => {
    for (;;) {
      while (worker) await worker;
      if (timers.runDue(clock.now()) === 0) break;
    }
    const err = pendingError;
    pendingError = undefined;
    if (err) throw err;
  };

  return {
    endpoint: dataPlane.endpoint,
    url: `http://${dataPlane.endpoint}`,
    httpUrl,
    table,
    get events() {
      return events.toArray();
    },
    get deadLetters() {
      return letters.toArray();
    },
    get counts(): BusCounts {
      return { events: events.total, eventsByDetailType: Object.fromEntries(byType), deadLetters: letters.total };
    },
    advance: (ms) => advanceThrough(clock, timers, drain, ms),
    drain,
    on(event, listener) {
      emitter.on(event, listener as never);
      return () => void emitter.off(event, listener as never);
    },
    async close() {
      if (ticker) clearInterval(ticker);
      timers.clear();
      while (worker) await worker.catch(() => undefined);
      await dataPlane.close();
      await Promise.all(httpTriggers.map((t) => t.close()));
    },
  };
}
