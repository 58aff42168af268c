import { describe, expect, it, vi } from 'vitest';
import { ManualClock } from './clock.ts';
import { HandlerLoadError, HandlerLoader, invoke, lambdaContext } from './handler-loader.ts';
import type { FunctionDef } from './rules.ts';

const fn = (modulePath: string, exportPath: string[], timeoutSeconds = 6): FunctionDef => ({
  key: 'k',
  name: 'svc-dev-k',
  modulePath: new URL(modulePath, import.meta.url).pathname,
  exportPath,
  timeoutSeconds,
});

describe('HandlerLoader', () => {
  it.each([
    [
      'a module that does not exist',
      './fixtures/handlers/absent',
      ['handler'],
      /handler module .*absent not found \(tried \.ts, \.mts, \.js, \.mjs\)/,
    ],
    ['an export that does not exist', './fixtures/handlers/record', ['nope'], /has no exported function nope/],
    [
      'an export that is not a function',
      './fixtures/handlers/record',
      ['calls', 'length'],
      /has no exported function calls\.length/,
    ],
  ])('reports %s as HandlerLoadError', async (_what, path, exportPath, message) => {
    const err = await new HandlerLoader().load(fn(path, exportPath)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HandlerLoadError);
    expect((err as Error).message).toMatch(message);
  });

  it('invokes a middy-wrapped handler', async () => {
    const h = await new HandlerLoader().load(fn('./fixtures/handlers/middy', ['handler']));
    const ctx = lambdaContext(fn('./x', ['h']), new ManualClock(), 'r', 'a');
    await expect(invoke(h, { source: 'gpu-reflex.node-agent' }, ctx, 6)).resolves.toEqual({
      source: 'gpu-reflex.node-agent',
      seenBy: 'middy',
    });
  });

  it('loads a TypeScript handler by its export name', async () => {
    const h = await new HandlerLoader().load(fn('./fixtures/handlers/record', ['handler']));
    expect(typeof h).toBe('function');
  });
});

describe('lambdaContext and invoke', () => {
  it('counts remaining time down on the injected clock', () => {
    const clock = new ManualClock(1_000);
    const ctx = lambdaContext(fn('./x', ['h'], 30), clock, 'eu-west-1', '123');
    expect(ctx.invokedFunctionArn).toBe('arn:aws:lambda:eu-west-1:123:function:svc-dev-k');
    expect(ctx.getRemainingTimeInMillis()).toBe(30_000);
    clock.set(26_000);
    expect(ctx.getRemainingTimeInMillis()).toBe(5_000);
    clock.set(99_000);
    expect(ctx.getRemainingTimeInMillis()).toBe(0);
  });

  it('supports callback-style handlers', async () => {
    const ctx = lambdaContext(fn('./x', ['h']), new ManualClock(), 'r', 'a');
    const ok = (_e: unknown, _c: unknown, cb?: (err: unknown, r?: unknown) => void) => cb?.(null, 'fine');
    const bad = (_e: unknown, _c: unknown, cb?: (err: unknown, r?: unknown) => void) => cb?.(new Error('nope'));
    await expect(invoke(ok, {}, ctx, 1)).resolves.toBe('fine');
    await expect(invoke(bad, {}, ctx, 1)).rejects.toThrow('nope');
  });

  it('fails a handler that throws synchronously', async () => {
    const ctx = lambdaContext(fn('./x', ['h']), new ManualClock(), 'r', 'a');
    await expect(
      invoke(
        () => {
          throw new Error('sync');
        },
        {},
        ctx,
        1,
      ),
    ).rejects.toThrow('sync');
  });

  it('times out a handler that never settles, as Lambda does', async () => {
    const h = await new HandlerLoader().load(fn('./fixtures/handlers/record', ['hang']));
    const ctx = lambdaContext(fn('./x', ['h']), new ManualClock(), 'r', 'a');
    vi.useFakeTimers();
    try {
      const running = invoke(h, {}, ctx, 6);
      const settled = expect(running).rejects.toThrow('Task timed out after 6.00 seconds');
      await vi.advanceTimersByTimeAsync(6_000);
      await settled;
    } finally {
      vi.useRealTimers();
    }
  });
});
