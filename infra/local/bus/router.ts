import { appendFileSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { EventEmitter } from 'node:events';
import { prepareEvent, compilePattern, type PatternMatcher } from '../../../events/pattern.ts';
import type { Clock, TimerQueue } from './clock.ts';
import type { DeadLetter, DeliveryEvents } from './delivery-events.ts';
import { isoSeconds, type EventEnvelope } from './envelope.ts';
import { HandlerLoadError, HandlerLoader, invoke, lambdaContext } from './handler-loader.ts';
import type { AcceptedEvent } from './put-events.ts';
import { lookup } from './serverless-yaml.ts';
import type { EventRule, FunctionDef, RetryPolicy, TargetInput } from './rules.ts';
import { DEFAULT_HISTORY_SIZE, Ring } from './history.ts';

/**
 * Delivers matched events to handlers, at least once, the way EventBridge retries a target:
 * exponential backoff with jitter on the injected clock, up to the rule's maximumRetryAttempts
 * and maximumEventAge, then the dead-letter file. A handler that cannot be loaded is not retried
 * (EventBridge does not retry a target that does not exist) and goes straight to dead letters.
 *
 * Deliveries run one at a time in arrival order by default, so a run is reproducible and the
 * timeline reads in order; `concurrency` > 1 runs up to that many at once, taken in arrival order,
 * as Lambda runs concurrent invocations of one function (benchmarks of a storm need that).
 * `drain()` resolves when nothing is queued or running.
 */
export interface RouterOptions {
  clock: Clock;
  timers: TimerQueue;
  region: string;
  account: string;
  dlqPath?: string;
  /** Uniform [0, 1); seeded by default so jitter is reproducible. */
  random?: () => number;
  /** Deliveries running at once (default 1: one at a time, in arrival order). */
  concurrency?: number;
  /** Dead letters kept in `deadLetters` (the last N; the file has them all); default DEFAULT_HISTORY_SIZE. */
  historySize?: number;
}

export interface Target {
  rule: string;
  fn: FunctionDef;
  input: TargetInput;
  retryPolicy: RetryPolicy;
  deadLetterQueueArn?: string;
}

interface Job {
  target: Target;
  event: EventEnvelope;
  attempt: number;
  firstAt: number;
}

/** Backoff: 1 s doubling to 5 min, "equal jitter" (half fixed, half random) so no retry is immediate. */
export const BACKOFF_BASE_MS = 1_000;
export const BACKOFF_CAP_MS = 300_000;

export function backoffMs(retry: number, random: () => number): number {
  const ceiling = Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** (retry - 1));
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}

export class Router extends EventEmitter<DeliveryEvents> {
  private readonly letters: Ring<DeadLetter>;
  private rules: { rule: EventRule; matches: PatternMatcher }[];
  private readonly loader = new HandlerLoader();
  private readonly queue: Job[] = [];
  private readonly workers = new Set<Promise<void>>();
  /** Workers not yet past their last shift; counted synchronously so a push never lands in a dead queue. */
  private active = 0;
  private readonly concurrency: number;
  private pendingError: unknown;
  private readonly random: () => number;

  constructor(
    rules: EventRule[],
    private readonly opts: RouterOptions,
  ) {
    super();
    // Compiling up front means a pattern AWS would refuse fails startup, naming the rule.
    this.rules = rules.map((rule) => {
      try {
        return { rule, matches: compilePattern(rule.pattern) };
      } catch (err) {
        throw new Error(`rule ${rule.name} (function ${rule.fn.key}): ${(err as Error).message}`, { cause: err });
      }
    });
    this.letters = new Ring(opts.historySize ?? DEFAULT_HISTORY_SIZE);
    this.random = opts.random ?? mulberry32(1);
    this.concurrency = opts.concurrency ?? 1;
    if (!Number.isInteger(this.concurrency) || this.concurrency < 1)
      throw new RangeError(`concurrency must be a positive integer, got ${opts.concurrency}`);
    if (opts.dlqPath) mkdirSync(dirname(opts.dlqPath), { recursive: true });
  }

  /** Routes by these rules from now on (PutRule, PutTargets, …: rule-registry.ts validated them). */
  setRules(rules: EventRule[]): void {
    this.rules = rules.map((rule) => ({ rule, matches: compilePattern(rule.pattern) }));
  }

  /** The last dead letters (at most historySize), oldest first. */
  get deadLetters(): DeadLetter[] {
    return this.letters.toArray();
  }

  /** Dead letters since the start, kept or not. */
  get deadLetterCount(): number {
    return this.letters.total;
  }

  /** Queues a delivery to every rule on the event's bus whose pattern matches. */
  route({ busName, envelope }: AcceptedEvent): void {
    const prepared = prepareEvent(envelope);
    for (const { rule, matches } of this.rules) {
      if (rule.busName === busName && matches(prepared)) this.enqueue(toTarget(rule), envelope);
    }
  }

  /** Queues one delivery (schedules use this directly). */
  enqueue(target: Target, event: EventEnvelope): void {
    this.push({ target, event, attempt: 1, firstAt: this.opts.clock.now() });
  }

  /** Resolves once nothing is queued or being delivered (retries waiting on the clock do not count). */
  async drain(): Promise<void> {
    while (this.workers.size > 0) await Promise.all(this.workers);
    const err = this.pendingError;
    this.pendingError = undefined;
    if (err) throw err;
  }

  private push(job: Job): void {
    this.queue.push(job);
    if (this.active < this.concurrency) {
      this.active++;
      const worker: Promise<void> = this.pump().finally(() => this.workers.delete(worker));
      this.workers.add(worker);
    }
  }

  /** One worker: takes queued jobs in arrival order until the queue is empty. */
  private async pump(): Promise<void> {
    await Promise.resolve(); // let the caller finish (e.g. answer PutEvents) before delivering
    try {
      for (let job = this.queue.shift(); job; job = this.queue.shift()) {
        // deliver() catches handler failures itself; anything else must not stall the queue.
        await this.deliver(job).catch((err: unknown) => (this.pendingError ??= err));
      }
    } finally {
      // In the same turn as the last shift, so a push right after starts a new worker.
      this.active--;
    }
  }

  private async deliver(job: Job): Promise<void> {
    const { target, event, attempt } = job;
    const at = this.opts.clock.now();
    const payload = structuredClone(inputFor(target.input, event));
    const info = { rule: target.rule, function: target.fn.key, event: payload, attempt, at };
    let outcome: { ok: true; result: unknown } | { ok: false; error: Error };
    try {
      const handler = await this.loader.load(target.fn);
      const context = lambdaContext(target.fn, this.opts.clock, this.opts.region, this.opts.account);
      outcome = { ok: true, result: await invoke(handler, payload, context, target.fn.timeoutSeconds) };
    } catch (raw) {
      outcome = { ok: false, error: raw instanceof Error ? raw : new Error(String(raw)) };
    }
    // Listeners run outside the try: a throwing listener is not a handler failure to retry.
    if (outcome.ok) return this.report('delivered', { ...info, result: outcome.result });
    const { error } = outcome;
    const { maximumRetryAttempts, maximumEventAgeSeconds } = target.retryPolicy;
    const retryAt = at + backoffMs(attempt, this.random);
    let reason: DeadLetter['reason'] | undefined;
    if (error instanceof HandlerLoadError) reason = 'not-retryable';
    else if (attempt > maximumRetryAttempts) reason = 'retries-exhausted';
    else if (retryAt - job.firstAt > maximumEventAgeSeconds * 1000) reason = 'maximum-event-age';
    if (reason) {
      this.report('failed', { ...info, error });
      this.deadLetter(job, error, reason);
    } else {
      this.opts.timers.add(retryAt, () => this.push({ ...job, attempt: attempt + 1 }));
      this.report('failed', { ...info, error, retryAt });
    }
  }

  /** Emits; a listener that throws is remembered and rethrown by the next drain(), and delivery goes on. */
  report<K extends keyof DeliveryEvents>(name: K, ...args: DeliveryEvents[K]): void {
    try {
      (this.emit as (n: string, ...a: unknown[]) => boolean)(name, ...args);
    } catch (err) {
      this.pendingError ??= err;
    }
  }

  private deadLetter(job: Job, error: Error, reason: DeadLetter['reason']): void {
    const letter: DeadLetter = {
      time: isoSeconds(this.opts.clock.now()),
      rule: job.target.rule,
      function: job.target.fn.key,
      deadLetterQueueArn: job.target.deadLetterQueueArn ?? null,
      reason,
      errorName: error.name,
      errorMessage: error.message,
      attempts: job.attempt,
      event: job.event,
    };
    this.letters.push(letter);
    if (this.opts.dlqPath) {
      try {
        appendFileSync(this.opts.dlqPath, JSON.stringify(letter) + '\n');
      } catch (err) {
        this.pendingError ??= new Error(`writing dead letter to ${this.opts.dlqPath}: ${(err as Error).message}`, {
          cause: err,
        });
      }
    }
    this.report('dead-lettered', letter);
  }
}

function toTarget(rule: EventRule): Target {
  return {
    rule: rule.name,
    fn: rule.fn,
    input: rule.input,
    retryPolicy: rule.retryPolicy,
    ...(rule.deadLetterQueueArn ? { deadLetterQueueArn: rule.deadLetterQueueArn } : {}),
  };
}

function inputFor(input: TargetInput, event: EventEnvelope): unknown {
  if (input.kind === 'constant') return input.value;
  if (input.kind === 'path') return input.path === '$' ? event : lookup(event, input.path.slice(2));
  return event;
}

/** A small seeded PRNG: reproducible jitter without touching Math.random. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
