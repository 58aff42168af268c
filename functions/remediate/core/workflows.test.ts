import { describe, expect, it } from 'vitest';
import type { GpuXidErrorDetail } from '../../../events/index.ts';
import { planRemediation } from './plan.ts';
import { DEFAULT_POLICY } from './policy.ts';
import { renderSteps } from './detail.ts';
import { apply, at, factsFor, node, STANDARD_PODS, xid } from '../testing.ts';
import type { Plan, TriggerEvent } from './types.ts';

const kinds = (plan: Plan) => renderSteps(plan).map((s) => s.kind);

/** An NVLink5 XID as the agent sends it from the kernel line: its words and the line's own word. */
function nvlink5(
  x: number,
  intrinfo: number,
  errorStatus: number,
  severity: 'fatal' | 'nonfatal',
  o: { minute?: number; gpu?: number } = {},
): TriggerEvent {
  const e = xid(x, { ...o, severity, pods: [{ uid: 'uid-train-0' }] });
  const detail: GpuXidErrorDetail = {
    ...(e.detail as GpuXidErrorDetail),
    via: 'kmsg',
    nvlink: { unit: 'from-the-line', link: 8, intrinfo, errorStatus },
  };
  return { detailType: 'GPU XID Error', detail } as TriggerEvent;
}

async function replay(events: TriggerEvent[]): Promise<Plan[]> {
  const plans: Plan[] = [];
  let cur = { node: node(), pods: STANDARD_PODS };
  for (const e of events) {
    const plan = planRemediation(factsFor(e, cur.node, { pods: cur.pods }), DEFAULT_POLICY);
    plans.push(plan);
    cur = await apply(cur.node, cur.pods, plan);
  }
  return plans;
}

describe("NVIDIA's NVLink5 decode in the plan (XIDs 144–150)", () => {
  it.each([
    ['149 NETIR_BER_EVENT', 149, 0x13, 0x0, 'nonfatal'],
    ['149 NETIR_MFDE_EVENT 0x3', 149, 0x14, 0x3, 'nonfatal'],
    ['144 SAW_MVB 0x4', 144, 0x1, 0x4, 'nonfatal'],
    ['147 TREX, even on a line that says Fatal', 147, 0xe, 0x1, 'fatal'],
    ['148 NVLPW_CTRL', 148, 0xf, 0x80000000, 'nonfatal'],
    ['149 NETIR_LINK_DOWN reason 101000 (IGNORE though the sheet says Fatal)', 149, 0x02800011, 0x0, 'fatal'],
  ] as const)('observes %s: nothing fenced, reset, evicted or cordoned', async (_, x, intrinfo, status, severity) => {
    const [plan] = await replay([nvlink5(x, intrinfo, status, severity)]);
    expect(plan!.action).toBe('observe');
    expect(kinds(plan!).filter((k) => ['taint', 'cordon', 'fence', 'reset', 'evict'].includes(k))).toEqual([]);
    expect(plan!.reason).toMatch(/NVIDIA's decode says (IGNORE|XID_154_EVAL)|every row of NVIDIA's decode/);
  });

  it('quarantines and resets on a fatal row, with the decoded reason in the words, even after non-fatal ones on the same GPU', async () => {
    const plans = await replay([
      nvlink5(149, 0x13, 0x0, 'nonfatal', { minute: 0 }),
      nvlink5(149, 0x13, 0x1, 'nonfatal', { minute: 1 }),
      nvlink5(149, 0x01000011, 0x0, 'fatal', { minute: 2 }),
    ]);
    expect(plans.map((p) => p.action)).toEqual(['observe', 'observe', 'quarantine-gpu']);
    const fatal = plans[2]!;
    expect(kinds(fatal)).toEqual(expect.arrayContaining(['evict']));
    expect(fatal.nextState.incidents.find((i) => i.phase === 'quarantined')).toMatchObject({
      xid: 149,
      trigger: 'xid-149',
    });
    expect(fatal.reason).toContain(
      'decoded on link 8: NETIR_LINK_EVT/NETIR_LINK_DOWN (intrinfo 0x01000011, errorStatus 0x00000000): RESET_GPU, Link Fatal',
    );
    expect(plans[0]!.reason).toContain(
      'NETIR_BER_EVENT (intrinfo 0x00000013, errorStatus 0x00000000): IGNORE, Non-fatal; investigate: INVESTIGATE_LINK_SI_AND_CABLES',
    );
  });

  it('quarantines an NVLink5 XID NVIDIA’s sheet cannot decode when the line says Fatal, observes it when it says Nonfatal', async () => {
    expect((await replay([nvlink5(146, 0x7f, 0x0, 'fatal')]))[0]!.action).toBe('quarantine-gpu');
    expect((await replay([nvlink5(146, 0x7f, 0x0, 'nonfatal')]))[0]!.action).toBe('observe');
  });
});

describe("NVIDIA's WORKFLOW_XID_45", () => {
  it('ignores an XID 45 that follows another XID on the same GPU: that XID decides', async () => {
    const plans = await replay([
      xid(48, { minute: 0, pods: [{ uid: 'uid-train-0' }] }),
      xid(45, { minute: 1, pods: [{ uid: 'uid-train-0' }] }),
    ]);
    expect(plans.map((p) => p.action)).toEqual(['quarantine-gpu', 'ignore']);
    expect(plans[1]!.notices).toEqual([]);
    expect(plans[1]!.reason).toContain('it follows XID 48 on this GPU, so it is that error');
  });

  it('observes an XID 45 alone on its GPU and tells a person NVIDIA says restart Fabric Manager; never escalates', async () => {
    // XID 48 on another GPU does not make it "not solo".
    const plans = await replay([
      xid(48, { gpu: 1, minute: 0 }),
      ...[1, 2, 3, 4, 5, 6].map((m) => xid(45, { minute: m, pods: [{ uid: m % 2 ? 'uid-train-0' : 'uid-train-1' }] })),
    ]);
    expect(plans.slice(1).map((p) => p.action)).toEqual([
      'observe',
      'observe',
      'observe',
      'observe',
      'observe',
      'observe',
    ]);
    expect(plans[1]!.notices).toHaveLength(1);
    expect(plans[1]!.reason).toContain('alone: restart Fabric Manager');
    expect(plans[1]!.reason).toContain('NVIDIA says: alone, restart Fabric Manager');
    expect(plans.slice(2).every((p) => p.notices.length === 0)).toBe(true);
  });

  it('an XID 45 more than five minutes after the other XID is alone again', async () => {
    const plans = await replay([
      xid(13, { minute: 0, pods: [{ uid: 'uid-train-0' }] }),
      xid(45, { minute: 6, pods: [{ uid: 'uid-train-0' }] }),
    ]);
    expect(plans[1]!.action).toBe('observe');
  });
});

describe("NVIDIA's WORKFLOW_XID_48 (double-bit ECC with or without the row-remap XIDs 63/64)", () => {
  const pods = [{ uid: 'uid-train-0' }];
  const incidentOf = (plan: Plan, x: number) => plan.nextState.incidents.find((i) => i.xid === x);

  it('48 alone: quarantines the GPU and moves its pods at once, to be reset', async () => {
    const [plan] = await replay([xid(48, { minute: 0, pods })]);
    expect(plan!.action).toBe('quarantine-gpu');
    expect(kinds(plan!)).toEqual(expect.arrayContaining(['evict']));
    expect(incidentOf(plan!, 48)?.evictAt).toBeUndefined();
    expect(plan!.reason).not.toMatch(/with XID 6[34]/);
  });

  it('48 with a 63 just before: the row is remapped, so new work is fenced and running work may finish before the reset', async () => {
    const plans = await replay([xid(63, { minute: 0, pods }), xid(48, { minute: 1, pods })]);
    const plan = plans[1]!;
    expect(plan.action).toBe('quarantine-gpu');
    expect(kinds(plan)).not.toContain('evict');
    expect(incidentOf(plan, 48)?.evictAt).toBe(new Date(Date.parse(at(1)) + 1000 + 480 * 60_000).toISOString());
    expect(plan.reason).toContain('with XID 63: the row is remapped');
  });

  it('48 with a 64 just before: the remap failed, so its pods move at once and a person is told', async () => {
    const plans = await replay([
      xid(64, { minute: 0, gpu: 1 }),
      xid(64, { minute: 0, pods }),
      xid(48, { minute: 2, pods }),
    ]);
    const plan = plans[2]!;
    expect(plan.action).toBe('quarantine-gpu');
    expect(plan.reason).toContain('with XID 64: the row remap failed');
    expect(incidentOf(plan, 48)?.evictAt).toBeUndefined();
    expect(plan.notices.length).toBeGreaterThan(0);
  });

  it('a 63 after the 48 belongs to it: nothing of its own, the 48 incident decides', async () => {
    const plans = await replay([xid(48, { minute: 0, pods }), xid(63, { minute: 1, pods })]);
    expect(plans.map((p) => p.action)).toEqual(['quarantine-gpu', 'observe']);
    expect(plans[1]!.kind).toBe('noop');
    expect(plans[1]!.notices).toEqual([]);
    expect(plans[1]!.reason).toContain('it records the remap of the XID 48 just before on this GPU');
  });

  it('a 64 after the 48: the remap of that DBE failed; the 64 quarantines as NVIDIA says and tells a person', async () => {
    const plans = await replay([xid(48, { minute: 0, pods }), xid(64, { minute: 1, pods })]);
    expect(plans[1]!.action).toBe('quarantine-gpu');
    expect(plans[1]!.reason).toContain('after XID 48: the row remap of that DBE failed');
    expect(plans[1]!.notices.length).toBeGreaterThan(0);
  });

  it('a 63 more than five minutes before, or on another GPU, leaves the 48 alone; a 63 alone is its own rule', async () => {
    const far = await replay([xid(63, { minute: 0, pods }), xid(48, { minute: 6, pods })]);
    expect(kinds(far[1]!)).toContain('evict');
    const other = await replay([xid(63, { minute: 0, gpu: 1 }), xid(48, { minute: 1, pods })]);
    expect(kinds(other[1]!)).toContain('evict');
    const [alone] = await replay([xid(63, { minute: 0, pods })]);
    expect(alone!.action).toBe('observe');
    expect(alone!.kind).toBe('act');
  });
});
