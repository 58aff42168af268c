import { afterEach, describe, expect, it, vi } from 'vitest';
import { VirtualClock } from '../../events/clock.ts';
import { currentClock, injectClock } from './clock.ts';

afterEach(() => injectClock(undefined));

describe('currentClock / injectClock', () => {
  it('follows an injected clock, also when wired before the injection, and goes back to the system clock', () => {
    const wired = currentClock();
    injectClock(new VirtualClock(Date.UTC(2041, 0, 1)));
    expect(wired.now()).toBe(Date.UTC(2041, 0, 1));
    injectClock(undefined);
    expect(Math.abs(wired.now() - Date.now())).toBeLessThan(60_000);
  });

  it('is seen by a second instance of this module (a host and the handlers it imports)', async () => {
    injectClock(new VirtualClock(Date.UTC(2041, 0, 1)));
    vi.resetModules();
    const other = await import('./clock.ts');
    expect(other.currentClock().now()).toBe(Date.UTC(2041, 0, 1));
  });
});

describe('VirtualClock', () => {
  it('fires timers in due order, ties in the order they were set, and resolves sleeps when moved past them', async () => {
    const c = new VirtualClock(0);
    const fired: string[] = [];
    c.setTimer(20, () => fired.push('b'));
    c.setTimer(10, () => fired.push('a1'));
    c.setTimer(10, () => fired.push('a2'));
    const cancel = c.setTimer(15, () => fired.push('cancelled'));
    cancel();
    let woke = false;
    void c.sleep(30).then(() => (woke = true));
    c.advance(25);
    await Promise.resolve();
    expect(fired).toEqual(['a1', 'a2', 'b']);
    expect(woke).toBe(false);
    c.set(10); // never backwards
    expect(c.now()).toBe(25);
    c.advance(5);
    await Promise.resolve();
    expect(woke).toBe(true);
    expect(c.pendingTimers).toBe(0);
  });
});
