import { describe, expect, it } from 'vitest';
import { emptyState } from './core/state.ts';
import type { Plan } from './core/types.ts';
import { newsworthy, retryOnly } from './reported.ts';

const plan = (over: Partial<Plan> = {}): Plan =>
  ({
    kind: 'sweep',
    incident: 'i-1',
    action: 'drain',
    scope: 'node',
    phase: 'draining',
    target: { node: 'gpu-0', gpus: [], migInstances: [], pods: [] },
    evictions: [],
    notices: [],
    cloud: [],
    reason: 'r',
    trigger: { eventId: 'e', detailType: 'Sweep', node: 'gpu-0', observedAt: '2026-01-01T00:00:00Z' },
    nextState: emptyState(),
    ...over,
  }) as Plan;
const evict = { namespace: 'ml', name: 'train-0' };

describe('which plans are reported', () => {
  it('bookkeeping alone is nobody’s news; a skipped plan neither', () => {
    expect(newsworthy(plan())).toBe(false);
    expect(newsworthy(plan({ evictions: [evict] as Plan['evictions'], phase: 'skipped' }))).toBe(false);
  });

  it('a cordon, an eviction, a notice or a cloud step is', () => {
    const edit = { addTaints: [], removeTaints: [], unschedulable: true, labels: {} };
    expect(newsworthy(plan({ nodeEdit: edit } as unknown as Partial<Plan>))).toBe(true);
    expect(newsworthy(plan({ evictions: [evict] as Plan['evictions'] }))).toBe(true);
    expect(newsworthy(plan({ notices: [{ title: 't', text: 'x', severity: 'info' }] as Plan['notices'] }))).toBe(true);
  });

  it('evictions asked again, and nothing else, are not reported again (issue #29)', () => {
    const p = plan({ evictions: [evict] as Plan['evictions'] });
    expect(retryOnly(p, new Set(['gpu-0\u0000ml/train-0']))).toBe(true);
    expect(retryOnly(p, new Set())).toBe(false);
    const withNotice = plan({
      evictions: [evict] as Plan['evictions'],
      notices: [{ title: 't', text: 'x', severity: 'info' }] as Plan['notices'],
    });
    expect(retryOnly(withNotice, new Set(['gpu-0\u0000ml/train-0']))).toBe(false);
  });
});
