import type { DeliveryEvents } from './delivery-events.ts';
import { isoSeconds } from './envelope.ts';
import type { LocalBus } from './index.ts';

/**
 * One line per thing the bus did, for `bus serve` and the local stack's timeline:
 *   2026-01-01T00:05:00Z delivered     remediate-rule-1 → remediate (attempt 1)
 */
export function formatBusEvent<K extends keyof DeliveryEvents>(name: K, ...[p]: DeliveryEvents[K]): string {
  const pad = name.padEnd(13);
  if ('reason' in p) {
    return (
      `${p.time} ${pad} ${p.rule} → ${p.function} after ${p.attempts} attempt${p.attempts === 1 ? '' : 's'} ` +
      `(${p.reason}): ${p.errorMessage}`
    );
  }
  const head = `${isoSeconds(p.at)} ${pad} ${p.rule} → ${p.function}`;
  if ('error' in p) {
    const retry = p.retryAt === undefined ? '' : `; retry at ${isoSeconds(p.retryAt)}`;
    return `${head} (attempt ${p.attempt}): ${p.error.message}${retry}`;
  }
  if ('attempt' in p) return `${head} (attempt ${p.attempt})`;
  return head;
}

/** Subscribes `write` to every bus event; returns the unsubscribe function. */
export function printTimeline(bus: Pick<LocalBus, 'on'>, write: (line: string) => void): () => void {
  const names = ['scheduled', 'delivered', 'failed', 'dead-lettered'] as const;
  const offs = names.map((n) => bus.on(n, (...args) => write(formatBusEvent(n, ...(args as [never])))));
  return () => offs.forEach((off) => off());
}
