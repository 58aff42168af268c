import { InputError, UsageError } from '../../events/cli-kit/command.ts';
import type { EventEnvelope } from './bus/index.ts';

/**
 * What `gpu-reflex shadow` reads (shadow.ts): its durations, and the agents' recorded events in any
 * of three shapes.
 */

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `24h`, `90m`, `7d` → ms. */
export function parseDuration(text: string, flag: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/.exec(text.trim());
  if (!m) throw new UsageError(`${flag} takes a duration such as 30s, 90m, 24h or 7d, not ${JSON.stringify(text)}`);
  return Number(m[1]) * UNITS[m[2]!]!;
}

const isEnvelope = (x: unknown): x is EventEnvelope =>
  typeof x === 'object' &&
  x !== null &&
  typeof (x as EventEnvelope).source === 'string' &&
  typeof (x as EventEnvelope)['detail-type'] === 'string' &&
  typeof (x as EventEnvelope).time === 'string' &&
  typeof (x as EventEnvelope).detail === 'object';

/** The events of a file in any of the three shapes, or an InputError naming what is wrong and where. */
export function readRecordedEvents(text: string, file: string): EventEnvelope[] {
  const trimmed = text.trim();
  if (trimmed === '') throw new InputError(`${file}: no events in it`);
  let items: unknown[];
  if (trimmed.startsWith('[') || trimmed.startsWith('{"scenario"') || /^\{\s*"scenario"/.test(trimmed)) {
    let doc: unknown;
    try {
      doc = JSON.parse(trimmed);
    } catch (err) {
      throw new InputError(`${file}: not JSON (${(err as Error).message})`);
    }
    items = Array.isArray(doc)
      ? doc
      : (((doc as { events?: { event?: unknown }[] }).events ?? []).map((e) => e.event) as unknown[]);
  } else {
    items = trimmed.split('\n').flatMap((line, i) => {
      if (line.trim() === '') return [];
      try {
        return [JSON.parse(line) as unknown];
      } catch {
        throw new InputError(`${file}:${i + 1}: not a JSON event`);
      }
    });
  }
  items.forEach((x, i) => {
    if (!isEnvelope(x))
      throw new InputError(
        `${file}: event ${i + 1} is not an EventBridge event (it needs source, detail-type, time and detail)`,
      );
    if (Number.isNaN(Date.parse(x.time))) throw new InputError(`${file}: event ${i + 1} has no valid time`);
  });
  return items as EventEnvelope[];
}
