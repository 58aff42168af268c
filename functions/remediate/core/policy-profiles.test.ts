import { describe, expect, it } from 'vitest';
import { loadPolicy, PolicyFileError } from './policy-file.ts';
import { DEFAULT_POLICY, resolveRule, type RuleTrigger } from './policy.ts';
import { modelMatches, modelsOverlap } from './policy-profiles.ts';
import { planRemediation } from './plan.ts';
import { toRemediationDetail } from './detail.ts';
import { planSweep } from './sweep.ts';
import {
  GPU_ACTION_RESULTS_ANNOTATION,
  GPU_ACTIONS_ANNOTATION,
  type GpuActionRequest,
  type GpuActionState,
} from '../../../events/index.ts';
import { apply, at, factsFor, node, pool, STANDARD_PODS, stateOf, xid } from '../testing.ts';

const errorOf = (text: string, file = 'policy.yaml'): string => {
  try {
    loadPolicy(text, file);
  } catch (e) {
    expect(e).toBeInstanceOf(PolicyFileError);
    return (e as Error).message;
  }
  throw new Error('expected loadPolicy to throw');
};

const xt = (x: number, gpuModel?: string): RuleTrigger => ({ kind: 'xid', xid: x, ...(gpuModel ? { gpuModel } : {}) });

// The EKS users' examples (issue #36): XID 79 on H100s in pool train reboots at once; XID 13 on T4
// inference restarts its workload after 5 in 10 min.
const EKS = `
profiles:
  train-h100-79:
    match: { pools: [train], gpuModels: ["*H100*"], xids: [79] }
    action: reboot-node
  t4-inference-13:
    match: { pools: [inference], gpuModels: ["*T4*"], xids: [13] }
    action: observe
    then: [restart-workload]
    escalate: { count: 5, windowMinutes: 10, distinctWorkloads: 1 }
  train-app:
    match: { pools: [train], xidClasses: [RESTART_APP] }
    action: restart-workload
`;

describe('policy profiles', () => {
  const p = loadPolicy(EKS, 'p.yaml');

  it('reboots at once on XID 79 on an H100 of pool train, and says which profile decided', () => {
    const r = resolveRule(p, 'train', xt(79, 'NVIDIA H100 80GB HBM3'));
    expect(r).toMatchObject({
      action: 'reboot-node',
      profile: 'train-h100-79',
      source: 'XID 79 (profile train-h100-79)',
    });
    // The same XID on an A100 of the same pool, or on an H100 elsewhere: the table decides.
    expect(resolveRule(p, 'train', xt(79, 'NVIDIA A100-SXM4-80GB'))).toMatchObject({ action: 'drain-node' });
    expect(resolveRule(p, 'train', xt(79, 'NVIDIA A100-SXM4-80GB')).profile).toBeUndefined();
    expect(resolveRule(p, 'batch', xt(79, 'NVIDIA H100 80GB HBM3')).profile).toBeUndefined();
    // No model known: a profile that names models does not match.
    expect(resolveRule(p, 'train', xt(79)).profile).toBeUndefined();
  });

  it('counts XID 13 on T4 inference: 5 in 10 min, one workload, then restart', () => {
    const r = resolveRule(p, 'inference', xt(13, 'Tesla T4'));
    expect(r).toMatchObject({
      action: 'observe',
      then: ['restart-workload'],
      escalate: { count: 5, windowMinutes: 10, distinctWorkloads: 1 },
      profile: 't4-inference-13',
    });
  });

  it('matches a class: every RESTART_APP XID of pool train restarts its workload; a code beats a class', () => {
    expect(resolveRule(p, 'train', xt(13)).profile).toBe('train-app');
    expect(resolveRule(p, 'train', xt(31)).action).toBe('restart-workload');
    // 79 is RESTART_BM: not this class.
    expect(resolveRule(p, 'train', xt(79)).profile).toBeUndefined();
    const q = loadPolicy(
      'profiles:\n  by-class: { match: { xidClasses: [RESTART_APP] }, action: restart-workload }\n' +
        '  by-code: { match: { xids: [13] }, notify: true }\n',
      'p.yaml',
    );
    expect(resolveRule(q, 'x', xt(13)).profile).toBe('by-code');
    expect(resolveRule(q, 'x', xt(31)).profile).toBe('by-class');
  });

  it('a code beats a pool of the same number of dimensions; a pool and a model tie on any XID', () => {
    const q = loadPolicy(
      'profiles:\n  a: { match: { pools: [train] }, notify: true }\n  b: { match: { xids: [79] }, notify: true }\n',
      'p.yaml',
    );
    expect(resolveRule(q, 'train', xt(79)).profile).toBe('b');
    expect(resolveRule(q, 'train', xt(13)).profile).toBe('a');
    expect(
      errorOf(
        'profiles:\n  a: { match: { pools: [t] }, notify: true }\n  b: { match: { gpuModels: ["*"] }, notify: true }\n',
      ),
    ).toContain('profiles a and b both match any XID with the same rank');
  });

  it('the most specific wins: more of pool, model and XID named beats fewer, whatever the order in the file', () => {
    const text = (first: string, second: string) => `profiles:\n${first}\n${second}\n`;
    const wide = '  wide: { match: { pools: [train] }, notify: true }';
    const narrow = '  narrow: { match: { pools: [train], xids: [94] }, action: restart-workload }';
    for (const t of [text(wide, narrow), text(narrow, wide)]) {
      const q = loadPolicy(t, 'p.yaml');
      expect(resolveRule(q, 'train', xt(94)).profile).toBe('narrow');
      expect(resolveRule(q, 'train', xt(79)).profile).toBe('wide');
    }
  });

  it('never fences an IGNORE-class XID through a class, a pool or a model; only by its code', () => {
    const q = loadPolicy(
      'profiles:\n  harsh: { match: { pools: [train] }, action: quarantine-gpu }\n' +
        '  by-code: { match: { pools: [train], xids: [38] }, action: quarantine-gpu }\n',
      'p.yaml',
    );
    // 44 is IGNORE: `harsh` does not apply to it; 79 (RESTART_BM) it does.
    expect(resolveRule(q, 'train', xt(44))).toMatchObject({ action: 'observe' });
    expect(resolveRule(q, 'train', xt(44)).profile).toBeUndefined();
    expect(resolveRule(q, 'train', xt(79))).toMatchObject({ action: 'quarantine-gpu', profile: 'harsh' });
    // Named by code, it does what it says.
    expect(resolveRule(q, 'train', xt(38))).toMatchObject({ action: 'quarantine-gpu', profile: 'by-code' });
    // Escalating an IGNORE code into a fence through its pool is fencing too.
    const r = loadPolicy(
      'profiles:\n  esc: { match: { pools: [t] }, then: [quarantine-gpu], escalate: ' +
        '{ count: 2, windowMinutes: 5, distinctWorkloads: 0 } }\n',
      'p.yaml',
    );
    expect(resolveRule(r, 't', xt(63)).profile).toBeUndefined();
    expect(resolveRule(r, 't', xt(13)).profile).toBe('esc');
  });

  it.each([
    [
      'a tie of equal rank names both profiles',
      'profiles:\n  a: { match: { pools: [train], xids: [79] }, notify: true }\n' +
        '  b: { match: { gpuModels: ["*H100*"], xids: [79] }, notify: true }\n',
      'policy.yaml:3: profiles.b.match: profiles a and b both match XID 79 with the same rank',
    ],
    [
      'two class profiles over one class',
      'profiles:\n  a: { match: { xidClasses: [RESET_GPU] }, notify: true }\n' +
        '  b: { match: { xidClasses: [RESET_GPU, IGNORE] }, notify: true }\n',
      'profiles.b.match: profiles a and b both match XID',
    ],
    [
      'overlapping model globs',
      'profiles:\n  a: { match: { gpuModels: ["NVIDIA-*"] }, notify: true }\n' +
        '  b: { match: { gpuModels: ["*-80GB"] }, notify: true }\n',
      'profiles.b.match: profiles a and b both match any XID',
    ],
    [
      'an IGNORE class that fences',
      'profiles:\n  a: { match: { xidClasses: [IGNORE] }, action: drain-node }\n',
      'policy.yaml:2: profiles.a.match.xidClasses: a profile never fences NVIDIA IGNORE-class XIDs by class',
    ],
    ['an empty match', 'profiles:\n  a: { match: {}, notify: true }\n', 'profiles.a.match: expected at least one of'],
    ['no override', 'profiles:\n  a: { match: { xids: [13] } }\n', 'profiles.a: expected at least one of action'],
    [
      'an unknown class',
      'profiles:\n  a: { match: { xidClasses: [REBOOT] }, notify: true }\n',
      'policy.yaml:2: profiles.a.match.xidClasses.0: expected one of',
    ],
    [
      'a bad action',
      'profiles:\n  a: { match: { xids: [13] }, action: explode }\n',
      'policy.yaml:2: profiles.a.action: expected one of',
    ],
    [
      'a bad window',
      'profiles:\n  a:\n    match: { xids: [13] }\n    escalate: { count: 5, windowMinutes: 0, distinctWorkloads: 1 }\n',
      'policy.yaml:4: profiles.a.escalate',
    ],
    ['a bad name', 'profiles:\n  Bad Name: { match: { xids: [13] }, notify: true }\n', 'profiles.Bad Name'],
  ])('refuses %s, naming the file, the profile and the field', (_, text, message) => {
    expect(errorOf(text)).toContain(message);
  });

  it('accepts profiles of equal rank whose matches are disjoint', () => {
    const q = loadPolicy(
      'profiles:\n  a: { match: { gpuModels: ["NVIDIA-H100*"], xids: [79] }, action: reboot-node }\n' +
        '  b: { match: { gpuModels: ["Tesla-T4*"], xids: [79] }, action: drain-node }\n' +
        '  c: { match: { pools: [x], xidClasses: [RESET_GPU] }, notify: true }\n' +
        '  d: { match: { pools: [y], xidClasses: [RESET_GPU] }, notify: true }\n',
      'p.yaml',
    );
    expect(resolveRule(q, 'p', xt(79, 'Tesla T4')).profile).toBe('b');
  });

  it.each([
    ['*H100*', 'NVIDIA H100 80GB HBM3', true],
    ['NVIDIA-H100-80GB-HBM3', 'NVIDIA H100 80GB HBM3', true],
    ['nvidia-h100*', 'NVIDIA-H100-PCIe', true],
    ['*T4*', 'NVIDIA A100-SXM4-80GB', false],
    ['H100', 'NVIDIA H100 80GB HBM3', false],
  ])('model %s matches %s: %s', (pattern, model, ok) => {
    expect(modelMatches(pattern, model)).toBe(ok);
  });

  it.each([
    // Sound, not hopeful: some name ("H100-T4") matches both, so two such profiles of one rank tie.
    ['*H100*', '*T4*', true],
    ['NVIDIA-H100*', 'Tesla-T4*', false],
    ['*-PCIe', '*-SXM4-80GB', false],
    ['NVIDIA-*', '*-80GB', true],
    ['*H100*', 'NVIDIA-H100-PCIe', true],
    ['A*', 'B*', false],
    ['*', 'x', true],
  ])('globs %s and %s overlap: %s', (a, b, ok) => {
    expect(modelsOverlap(a, b)).toBe(ok);
    expect(modelsOverlap(b, a)).toBe(ok);
  });

  it('without profiles every rule is the table’s, bit for bit', () => {
    for (const x of [13, 31, 45, 48, 63, 79, 94, 149, 999])
      expect(resolveRule(loadPolicy('', 'p.yaml'), 'train', xt(x, 'NVIDIA H100'))).toEqual(
        resolveRule(DEFAULT_POLICY, 'train', x),
      );
  });

  it('records the profile on the plan, the incident and the Remediation event, and in its words', () => {
    const n = { ...node(), labels: { ...node().labels, 'gpu-reflex.io/pool': 'train' } };
    const e = xid(79, { pods: [{ uid: 'uid-train-0' }] });
    (e.detail.gpu as { name: string }).name = 'NVIDIA H100 80GB HBM3';
    const plan = planRemediation(factsFor(e, n, { pool: pool({ name: 'train' }) }), p);
    expect(plan).toMatchObject({ action: 'reboot-node', profile: 'train-h100-79' });
    expect(plan.nextState.incidents[0]).toMatchObject({ profile: 'train-h100-79' });
    const detail = toRemediationDetail(plan, undefined, { occurredAt: new Date() });
    expect(detail.profile).toBe('train-h100-79');
    expect(detail.reason).toContain('XID 79 (profile train-h100-79) → reboot-node');
    const plain = planRemediation(factsFor(e, n, { pool: pool({ name: 'train' }) }), DEFAULT_POLICY);
    expect(toRemediationDetail(plain, undefined, { occurredAt: new Date() })).not.toHaveProperty('profile');
  });

  it('matches the model on the node label when the event names no GPU model', () => {
    const n = {
      ...node(),
      labels: { ...node().labels, 'nvidia.com/gpu.product': 'NVIDIA-H100-80GB-HBM3' },
    };
    const e = xid(79, { pods: [{ uid: 'uid-train-0' }] });
    const { gpu, ...rest } = e.detail as typeof e.detail & { gpu: object };
    void gpu;
    const ev = { ...e, detail: { ...rest, gpu: undefined } } as unknown as typeof e;
    const plan = planRemediation(factsFor(ev, n, { pool: pool({ name: 'train' }) }), p);
    expect(plan.profile).toBe('train-h100-79');
  });

  it("names the profile on the sweep's later Remediation events for the incident it opened (its restore)", async () => {
    const q = loadPolicy('profiles:\n  a100-48: { match: { pools: [a100], xids: [48] }, notify: true }\n', 'p.yaml');
    const e = xid(48, { minute: 0, pods: [{ uid: 'uid-train-0' }] });
    let w = await apply(node(), STANDARD_PODS, planRemediation(factsFor(e, node()), q));
    const sweepAt = async (minute: number) => {
      const plan = planSweep(
        { now: new Date(at(minute)), nodes: [{ node: w.node, state: stateOf(w.node), pool: pool(), pods: w.pods }] },
        q,
      ).plans[0];
      if (plan) w = await apply(w.node, w.pods, plan);
      return plan;
    };
    const asked = (action: string) =>
      (JSON.parse(w.node.annotations[GPU_ACTIONS_ANNOTATION] ?? '[]') as GpuActionRequest[]).find(
        (r) => r.action === action,
      )!;
    const answer = (id: string, state: GpuActionState) => {
      const results = JSON.parse(w.node.annotations[GPU_ACTION_RESULTS_ANNOTATION] ?? '{}') as object;
      w = {
        ...w,
        node: {
          ...w.node,
          annotations: {
            ...w.node.annotations,
            [GPU_ACTION_RESULTS_ANNOTATION]: JSON.stringify({ ...results, [id]: state }),
          },
        },
      };
    };
    await sweepAt(1);
    const gpu = stateOf(w.node).incidents[0]!.gpu!;
    answer(asked('reset').id, { state: 'done', action: 'reset', gpuUuid: gpu, at: at(6) });
    await sweepAt(7);
    const probe = {
      nvmlAnswers: true,
      recoveryAction: 'none',
      remapPending: false,
      remapFailed: false,
      eccUncorrectedDelta: 0,
      xidsDuringProbe: [] as number[],
      passed: true,
    };
    answer(asked('probe').id, { state: 'done', action: 'probe', gpuUuid: gpu, at: at(8), probe });
    const restore = await sweepAt(9);
    expect(restore).toMatchObject({ kind: 'act', action: 'restore', profile: 'a100-48' });
    expect(toRemediationDetail(restore!, undefined, { occurredAt: new Date() }).profile).toBe('a100-48');
  });

  it('XID 13 on a T4 of pool inference: observed four times, the workload restarted at the fifth within 10 min', async () => {
    let cur = { node: node(), pods: STANDARD_PODS };
    const actions: string[] = [];
    for (const minute of [0, 2, 4, 6, 8]) {
      const e = xid(13, { minute, pods: [{ uid: 'uid-train-0' }] });
      (e.detail.gpu as { name: string }).name = 'Tesla T4';
      const plan = planRemediation(factsFor(e, cur.node, { pods: cur.pods, pool: pool({ name: 'inference' }) }), p);
      actions.push(plan.action);
      cur = await apply(cur.node, cur.pods, plan);
    }
    expect(actions).toEqual(['observe', 'observe', 'observe', 'observe', 'restart-workload']);
  });
});
