import { describe, expect, it } from 'vitest';
import { lazy } from './wiring.ts';

describe('lazy wiring', () => {
  it('wires once, however many invocations ask before it is done', async () => {
    let made = 0;
    const get = lazy(async () => ({ n: ++made }));
    const [a, b] = await Promise.all([get(), get()]);
    expect(a).toBe(b);
    expect(await get()).toBe(a);
    expect(made).toBe(1);
  });

  it('keeps no failed wiring: the next invocation wires again and reports it again', async () => {
    const outcomes = [new Error('bad configuration: LOG_LEVEL'), { ok: true }];
    const get = lazy(async () => {
      const next = outcomes.shift();
      if (next instanceof Error) throw next;
      return next;
    });
    await expect(get()).rejects.toThrow('bad configuration: LOG_LEVEL');
    await expect(get()).resolves.toEqual({ ok: true });
    expect(outcomes).toEqual([]);
  });
});
