import { describe, expect, it } from 'vitest';
import type { EventPublisher, PublishedEvent } from '../adapters/bus.ts';
import { NoChatNotifier, RecordingNotifier } from '../adapters/chat/notifier.ts';
import { manualClock } from '../adapters/clock.ts';
import { fakeKube } from '../adapters/kube/fake.ts';
import { silentLogger } from '../adapters/logger.ts';
import {
  encodeOutbox,
  flushStoreOutbox,
  mergeNotices,
  mergeOutbox,
  OUTBOX_ANNOTATION,
  pendingNotice,
  readOutbox,
  recordWithOutbox,
  type WithOutbox,
} from './outbox.ts';

const event = (id: string, steps = 0) => ({
  source: 'gpu-reflex.functions',
  detailType: 'Remediation',
  detail: {
    eventId: id,
    steps: Array.from({ length: steps }, (_, i) => ({
      kind: 'evict',
      target: `pod/ml/p${i}`,
      result: 'done',
      message: 'x'.repeat(400),
    })),
  },
});

describe('outbox', () => {
  it('reads back what it encodes, and an empty outbox encodes as removal', () => {
    const box = { events: [event('rem:a')], notices: [pendingNotice({ title: 't', text: 'x', severity: 'warning' })] };
    expect(readOutbox({ [OUTBOX_ANNOTATION]: encodeOutbox(box)! })).toEqual(box);
    expect(encodeOutbox({ events: [], notices: [] })).toBeNull();
    expect(readOutbox({})).toEqual({ events: [], notices: [] });
  });

  it('reads a corrupt outbox as empty, with a warning naming it, and never throws', () => {
    for (const raw of ['{', '[]', '{"events":[{"detailType":1}],"notices":[]}']) {
      expect(readOutbox({ [OUTBOX_ANNOTATION]: raw })).toEqual({
        events: [],
        notices: [],
        warning: `${OUTBOX_ANNOTATION} is corrupt: its events are lost`,
      });
    }
  });

  it('trims oversized step lists to stay within the node annotation budget, keeping every event', () => {
    const text = encodeOutbox({ events: [event('rem:big', 600)], notices: [] })!;
    expect(Buffer.byteLength(text)).toBeLessThan(64 * 1024);
    expect(readOutbox({ [OUTBOX_ANNOTATION]: text }).events.map((e) => e.detail.eventId)).toEqual(['rem:big']);
  });

  it('keeps one entry per event id and per notice, the newest rendering winning', () => {
    const merged = mergeOutbox(
      [event('rem:a'), event('rem:b')],
      [{ ...event('rem:a'), detail: { eventId: 'rem:a', phase: 'acted' } }],
    );
    expect(merged.map((e) => e.detail)).toEqual([
      { eventId: 'rem:a', phase: 'acted' },
      expect.objectContaining({ eventId: 'rem:b' }),
    ]);
    const n = pendingNotice({ title: 't', text: 'same', severity: 'info' });
    expect(mergeNotices([n], [pendingNotice({ title: 't', text: 'same', severity: 'info' })])).toHaveLength(1);
  });
});

describe('an outbox anchored on a state-store key (autoscale-pools’ pool records)', () => {
  const ev = (id: string): PublishedEvent => ({
    source: 'gpu-reflex.functions',
    detailType: 'GPU Pool Scaled',
    detail: { eventId: id },
  });
  const logger = silentLogger;
  /** Takes anything (these are not real GPU Pool Scaled events), and keeps it. */
  const bus = (): EventPublisher & { published: PublishedEvent[] } => {
    const published: PublishedEvent[] = [];
    return { published, publish: async (e) => void published.push(...e) };
  };

  it('keeps what was recorded until the bus takes it, and clears only what went', async () => {
    const kube = fakeKube({ clock: manualClock(0) });
    const rec = await recordWithOutbox<{ n?: number } & WithOutbox>(
      kube.state,
      'autoscale.p',
      (r) => ({ ...r, n: 1 }),
      [ev('a')],
      [{ title: 't', text: 'x', severity: 'info' }],
    );
    expect(rec).toMatchObject({ n: 1, events: [ev('a')], notices: [expect.objectContaining({ title: 't' })] });
    // The bus is down: the events stay, the notice that went does not.
    const chat = new RecordingNotifier();
    const down = { publish: async () => Promise.reject(new Error('bus down')) };
    await expect(
      flushStoreOutbox({ state: kube.state, publisher: down, notifier: chat, logger }, 'autoscale.p', rec),
    ).rejects.toThrow('bus down');
    expect(await kube.state.get('autoscale.p')).toEqual({ n: 1, events: [ev('a')] });
    // A record written meanwhile keeps its own; the next flush sends and clears.
    const again = await recordWithOutbox<WithOutbox>(kube.state, 'autoscale.p', (r) => r, [ev('b')]);
    const up = bus();
    await flushStoreOutbox({ state: kube.state, publisher: up, notifier: chat, logger }, 'autoscale.p', again);
    expect(up.published.map((e) => e.detail.eventId)).toEqual(['a', 'b']);
    expect(await kube.state.get('autoscale.p')).toEqual({ n: 1 });
    expect(chat.notices).toHaveLength(1); // sent before the bus failed, and not again
  });

  it('keeps no notice where no chat is configured', async () => {
    const kube = fakeKube({ clock: manualClock(0) });
    const rec = await recordWithOutbox<WithOutbox>(
      kube.state,
      'k',
      (r) => r,
      [],
      [{ title: 't', text: 'x', severity: 'info' }],
    );
    await flushStoreOutbox({ state: kube.state, publisher: bus(), notifier: new NoChatNotifier(), logger }, 'k', rec);
    expect(await kube.state.get('k')).toBeUndefined();
  });
});
