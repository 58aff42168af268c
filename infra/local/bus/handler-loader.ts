import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import type { Context } from 'aws-lambda';
import type { Clock } from './clock.ts';
import type { FunctionDef } from './rules.ts';

/**
 * Loads handlers in-process, lazily: a module is imported at its first delivery, so a
 * serverless.yml may name functions that do not exist yet. A missing module or export is a
 * delivery failure (`HandlerLoadError`), never a crash, and is tried again on the next delivery.
 */
export class HandlerLoadError extends Error {
  override name = 'HandlerLoadError';
}

export type LambdaHandler = (
  event: unknown,
  context: Context,
  callback?: (err: unknown, result?: unknown) => void,
) => unknown;

const EXTENSIONS = ['.ts', '.mts', '.js', '.mjs'];

export class HandlerLoader {
  private readonly cache = new Map<string, LambdaHandler>();

  async load(fn: FunctionDef): Promise<LambdaHandler> {
    const key = `${fn.modulePath}#${fn.exportPath.join('.')}`;
    const hit = this.cache.get(key);
    if (hit) return hit;
    const file = EXTENSIONS.map((ext) => fn.modulePath + ext).find((f) => existsSync(f));
    if (!file) {
      throw new HandlerLoadError(
        `function ${fn.key}: handler module ${fn.modulePath} not found (tried ${EXTENSIONS.join(', ')})`,
      );
    }
    let mod: unknown;
    try {
      // The one import() of an expression in the embedded world, on purpose: like Lambda's Node.js
      // runtime, the bus loads whatever module a function's `handler:` in serverless.yml names (any
      // serverless.yml: `gpu-reflex bus serve --config F`), so no list of modules could be written
      // here. What it loads is the code under test, run as the platform runs it; no rule of the bus
      // comes from it. test/contract/layers.test.ts lists this file as the one such import.
      mod = await import(pathToFileURL(file).href);
    } catch (err) {
      throw new HandlerLoadError(`function ${fn.key}: importing ${file} failed: ${(err as Error).message}`, {
        cause: err,
      });
    }
    let target: unknown = mod;
    for (const seg of fn.exportPath)
      target = typeof target === 'object' && target !== null ? (target as Record<string, unknown>)[seg] : undefined;
    if (typeof target !== 'function') {
      throw new HandlerLoadError(`function ${fn.key}: ${file} has no exported function ${fn.exportPath.join('.')}`);
    }
    this.cache.set(key, target as LambdaHandler);
    return target as LambdaHandler;
  }
}

/** The Lambda context a handler sees; remaining time counts down on the injected clock. */
export function lambdaContext(fn: FunctionDef, clock: Clock, region: string, account: string): Context {
  const deadline = clock.now() + fn.timeoutSeconds * 1000;
  const requestId = randomUUID();
  const unsupported = () => {
    throw new Error('context.done/fail/succeed are not supported: return or throw from the handler');
  };
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName: fn.name,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:${region}:${account}:function:${fn.name}`,
    memoryLimitInMB: '1024',
    awsRequestId: requestId,
    logGroupName: `/aws/lambda/${fn.name}`,
    logStreamName: `local/[$LATEST]${requestId.replace(/-/g, '')}`,
    getRemainingTimeInMillis: () => Math.max(0, deadline - clock.now()),
    done: unsupported,
    fail: unsupported,
    succeed: unsupported,
  };
}

/**
 * Calls a handler the way the Node.js runtime does (async result, or the callback for 3-arity
 * handlers), failing it as Lambda does when it runs past the function timeout. The timeout is
 * wall-clock on purpose: a hung handler must not hang `drain()` whatever the injected clock says.
 */
export function invoke(
  handler: LambdaHandler,
  event: unknown,
  context: Context,
  timeoutSeconds: number,
): Promise<unknown> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`Task timed out after ${timeoutSeconds.toFixed(2)} seconds`)),
      timeoutSeconds * 1000,
    );
    timer.unref();
  });
  return Promise.race([call(handler, event, context), timeout]).finally(() => clearTimeout(timer));
}

function call(handler: LambdaHandler, event: unknown, context: Context): Promise<unknown> {
  if (handler.length >= 3) {
    return new Promise((resolve, reject) => {
      const cb = (err: unknown, result?: unknown) =>
        err ? reject(err instanceof Error ? err : new Error(String(err))) : resolve(result);
      try {
        const r = handler(event, context, cb);
        if (r instanceof Promise) r.then(resolve, reject);
      } catch (err) {
        reject(err);
      }
    });
  }
  try {
    return Promise.resolve(handler(event, context));
  } catch (err) {
    return Promise.reject(err);
  }
}
