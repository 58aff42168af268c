import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { EventEnvelope } from './bus/index.ts';
import { clockText, eventEntry, formatEntry, formatSummary, type Summary } from './timeline.ts';

const example = (name: string) => JSON.parse(readFileSync(new URL(`../../events/catalog/${name}.example.json`, import.meta.url), 'utf8')) as EventEnvelope;

describe('timeline lines', () => {
  it.each([
    [0, '00:00.0'],
    [8_240, '00:08.2'],
    [61_000, '01:01.0'],
  ])('prints %d ms as %s', (ms, text) => expect(clockText(ms)).toBe(text));

  it('names the XID, its meaning, the GPU and the pods', () => {
    const e = eventEntry(8200, example('gpu-xid-error'), () => undefined);
    expect(e).toMatchObject({ who: 'gpu-a100-07', kind: 'event', what: 'GPU XID Error' });
    expect(e.text).toBe('XID 79 (GPU has fallen off the bus) on GPU 3 via both, pods ml-training/llama-ft-worker-3');
  });

  it('summarises a Remediation by what its steps did', () => {
    const e = eventEntry(8400, example('remediation'), () => undefined);
    expect(e.who).toBe('remediate');
    expect(e.text).toMatch(/^drain-node acted: tainted, cordoned, evicting 1 pod \(XID 79/);
  });

  it('colours only when asked', () => {
    const e = { atMs: 1000, who: 'n', kind: 'failure' as const, what: '', text: 'x' };
    expect(formatEntry(e, false)).not.toContain('\u001b[');
    const coloured = formatEntry(e, true);
    expect(coloured.startsWith('\u001b[31m') && coloured.endsWith('\u001b[0m')).toBe(true);
  });

  it('prints every summary count', () => {
    const s: Summary = { eventsByDetailType: { 'GPU XID Error': 2 }, actionsByKind: { 'drain-node acted': 1 }, nodesCordoned: ['a'], nodesTainted: ['a'], nodesQuarantined: [], podsEvicted: 3, podsRescheduled: 2, podsPending: { 'nvidia.com/gpu': 1 }, deliveryFailures: {}, deadLetters: 0 };
    const text = formatSummary(s).join('\n');
    for (const part of ['GPU XID Error 2', 'drain-node acted 1', 'nodes cordoned:    a', 'pods evicted:      3, rescheduled: 2, pending: nvidia.com/gpu 1', 'dead letters:      0']) expect(text).toContain(part);
  });
});
