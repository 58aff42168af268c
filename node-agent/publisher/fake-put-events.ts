/**
 * A stateful in-memory PutEvents for unit tests: records every call, keeps what it accepted, and
 * can be told to fail (whole calls, or chosen entries by code). A fake, not a mock: it behaves
 * like the bus, so tests assert on what the bus holds.
 */
import type { EntryResult, PutEntry, PutEventsSender } from './types.ts';

export class FakePutEvents {
  readonly calls: PutEntry[][] = [];
  readonly accepted: PutEntry[] = [];
  /** While set, every call rejects with this error. */
  down: Error | null = null;
  private failCallsLeft: { n: number; error: Error } | null = null;
  private entryFailures: { code: string; match: (e: PutEntry) => boolean; times: number }[] = [];
  /** When set, calls wait for this promise before answering (to hold one in flight). */
  gate: Promise<void> | null = null;

  readonly send: PutEventsSender = async (entries, options) => {
    this.calls.push([...entries]);
    if (this.gate) await raceAbort(this.gate, options?.signal);
    if (this.down) throw this.down;
    if (this.failCallsLeft && this.failCallsLeft.n > 0) {
      this.failCallsLeft.n--;
      throw this.failCallsLeft.error;
    }
    return entries.map((entry): EntryResult => {
      const rule = this.entryFailures.find((f) => f.times > 0 && f.match(entry));
      if (rule) {
        rule.times--;
        return { ok: false, code: rule.code, message: `${rule.code} (fake)` };
      }
      this.accepted.push(entry);
      return { ok: true, eventId: `fake-${this.accepted.length}` };
    });
  };

  failCalls(n: number, error: Error): void {
    this.failCallsLeft = { n, error };
  }

  /** The next `times` entries matching `match` fail with `code`. */
  failEntries(code: string, match: (e: PutEntry) => boolean, times = 1): void {
    this.entryFailures.push({ code, match, times });
  }

  /** detail.eventId of every accepted entry, in arrival order. */
  acceptedIds(): string[] {
    return this.accepted.map((e) => (JSON.parse(e.Detail) as { eventId: string }).eventId);
  }
}

function raceAbort(p: Promise<void>, signal?: AbortSignal): Promise<void> {
  if (!signal) return p;
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(Object.assign(new Error('aborted'), { name: 'AbortError' }));
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(resolve, reject);
  });
}

/** An error shaped like the SDK's for an HTTP failure. */
export function httpError(status: number, name = status === 429 ? 'ThrottlingException' : 'InternalException'): Error {
  return Object.assign(new Error(`${name} (HTTP ${status})`), { name, $metadata: { httpStatusCode: status } });
}

export function networkError(): Error {
  return Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' });
}
