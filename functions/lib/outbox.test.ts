import { describe, expect, it } from 'vitest';
import { encodeOutbox, mergeNotices, mergeOutbox, OUTBOX_ANNOTATION, pendingNotice, readOutbox } from './outbox.ts';

const event = (id: string, steps = 0) => ({ source: 'gpu-reflex.functions', detailType: 'Remediation', detail: { eventId: id, steps: Array.from({ length: steps }, (_, i) => ({ kind: 'evict', target: `pod/ml/p${i}`, result: 'done', message: 'x'.repeat(400) })) } });

describe('outbox', () => {
  it('reads back what it encodes, and an empty outbox encodes as removal', () => {
    const box = { events: [event('rem:a')], notices: [pendingNotice({ title: 't', text: 'x', severity: 'warning' })] };
    expect(readOutbox({ [OUTBOX_ANNOTATION]: encodeOutbox(box)! })).toEqual(box);
    expect(encodeOutbox({ events: [], notices: [] })).toBeNull();
    expect(readOutbox({})).toEqual({ events: [], notices: [] });
  });

  it('reads a corrupt outbox as empty, with a warning naming it, and never throws', () => {
    for (const raw of ['{', '[]', '{"events":[{"detailType":1}],"notices":[]}']) {
      expect(readOutbox({ [OUTBOX_ANNOTATION]: raw })).toEqual({ events: [], notices: [], warning: `${OUTBOX_ANNOTATION} is corrupt: its events are lost` });
    }
  });

  it('trims oversized step lists to stay within the node annotation budget, keeping every event', () => {
    const text = encodeOutbox({ events: [event('rem:big', 600)], notices: [] })!;
    expect(Buffer.byteLength(text)).toBeLessThan(64 * 1024);
    expect(readOutbox({ [OUTBOX_ANNOTATION]: text }).events.map((e) => e.detail.eventId)).toEqual(['rem:big']);
  });

  it('keeps one entry per event id and per notice, the newest rendering winning', () => {
    const merged = mergeOutbox([event('rem:a'), event('rem:b')], [{ ...event('rem:a'), detail: { eventId: 'rem:a', phase: 'acted' } }]);
    expect(merged.map((e) => e.detail)).toEqual([{ eventId: 'rem:a', phase: 'acted' }, expect.objectContaining({ eventId: 'rem:b' })]);
    const n = pendingNotice({ title: 't', text: 'same', severity: 'info' });
    expect(mergeNotices([n], [pendingNotice({ title: 't', text: 'same', severity: 'info' })])).toHaveLength(1);
  });
});
