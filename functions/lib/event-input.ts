import { EventEnvelopeSchema } from '../../events/envelope.ts';
import { problemsOf, validateDetail } from '../../events/validate.ts';
import { DropEvent } from './failure-meaning.ts';

export interface TypedEvent<D> {
  id: string;
  detailType: string;
  source: string;
  time: string;
  detail: D;
}

/** Parses an EventBridge event into a typed detail, or throws DropEvent naming every problem. */
export function parseEventBridgeEvent<D>(raw: unknown, detailTypes: readonly string[]): TypedEvent<D> {
  const env = EventEnvelopeSchema.safeParse(raw, { reportInput: true });
  if (!env.success)
    throw new DropEvent(
      problemsOf(env.error)
        .map((p) => `${p.path}: ${p.message}`)
        .join('; '),
    );
  const e = env.data;
  if (!detailTypes.includes(e['detail-type']))
    throw new DropEvent(
      `detail-type: "${e['detail-type']}" is not one of ${detailTypes.map((t) => `"${t}"`).join(', ')}`,
    );
  const d = validateDetail(e['detail-type'], e.detail);
  if (!d.ok) throw new DropEvent(d.problems.map((p) => `${p.path}: ${p.message}`).join('; '));
  return { id: e.id, detailType: e['detail-type'], source: e.source, time: e.time, detail: d.value as D };
}
