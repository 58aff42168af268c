import { afterEach, expect, it } from 'vitest';
import { oneGpu } from '../test/support/mock-nvml.ts';
import { validateDetail } from '../events/validate.ts';
import type { OutgoingEvent } from './events.ts';
import { startAgent, type AgentFixture } from '../test/support/agent-fixture.ts';
import { XID_AGGREGATE_WINDOW_MS } from './xid-aggregate.ts';

// The real agent on the mock NVML library, its clock stepped by the test.
let fx: AgentFixture | undefined;
afterEach(async () => {
  await fx?.close();
  fx = undefined;
});

const line = (xid: number, text = 'Ch 0000000a') =>
  `NVRM: Xid (PCI:0000:3B:00): ${xid}, pid=4242, name=python3, ${text}`;
const xids = (events: OutgoingEvent[]) =>
  events.filter((e) => e.detailType === 'GPU XID Error').map((e) => [e.detail.xid, e.detail.count ?? 1]);

it('turns a flood of one XID 45 into one event at once and one event with a count per window', async () => {
  fx = await startAgent(oneGpu(), { pids: [4242] });
  await fx.agent.sampleOnce();
  const sent: OutgoingEvent[] = [];
  for (let i = 0; i < 300; i++) {
    sent.push(...fx.agent.onKernelLine(line(45)));
    fx.advance(1_000);
  }
  // The GPU goes quiet: the next sample sends what the last window held.
  fx.advance(XID_AGGREGATE_WINDOW_MS);
  sent.push(...(await fx.agent.sampleOnce()));
  const got = xids(sent);
  expect(got.length).toBeLessThanOrEqual(1 + Math.ceil(300_000 / XID_AGGREGATE_WINDOW_MS));
  expect(got[0]).toEqual([45, 1]);
  expect(got.reduce((n, [, c]) => n + Number(c), 0)).toBe(300);
  for (const e of sent) expect(validateDetail(e.detailType, e.detail)).toMatchObject({ ok: true });
});

it('sends a fatal XID in the middle of a flood the moment it is seen', async () => {
  fx = await startAgent(oneGpu(), { pids: [4242] });
  await fx.agent.sampleOnce();
  for (let i = 0; i < 30; i++) {
    fx.agent.onKernelLine(line(45));
    fx.advance(1_000);
  }
  expect(xids(fx.agent.onKernelLine(line(79, 'GPU has fallen off the bus.')))).toEqual([[79, 1]]);
  fx.advance(1_000);
  expect(xids(fx.agent.onKernelLine(line(79, 'GPU has fallen off the bus.')))).toEqual([[79, 1]]);
});

it('sends the held repeats at shutdown', async () => {
  fx = await startAgent(oneGpu(), { pids: [4242] });
  await fx.agent.sampleOnce();
  for (let i = 0; i < 5; i++) {
    fx.agent.onKernelLine(line(13, 'Graphics Exception'));
    fx.advance(100);
  }
  expect(xids(fx.agent.flush())).toEqual([[13, 4]]);
});

it('sends a single held repeat as a valid event with count 1', async () => {
  fx = await startAgent(oneGpu(), { pids: [4242] });
  await fx.agent.sampleOnce();
  fx.agent.onKernelLine(line(31, 'MMU Fault'));
  fx.advance(1_000);
  expect(fx.agent.onKernelLine(line(31, 'MMU Fault'))).toEqual([]);
  fx.advance(XID_AGGREGATE_WINDOW_MS);
  const out = (await fx.agent.sampleOnce()).filter((e) => e.detailType === 'GPU XID Error');
  expect(xids(out)).toEqual([[31, 1]]);
  for (const e of out) expect(validateDetail(e.detailType, e.detail)).toMatchObject({ ok: true });
});

it('holds repeats for the configured window (XID_AGGREGATE_WINDOW_MS), and the event says its window', async () => {
  fx = await startAgent(oneGpu(), { pids: [4242], overrides: { xidAggregateWindowMs: 10_000 } });
  await fx.agent.sampleOnce();
  fx.agent.onKernelLine(line(31, 'MMU Fault'));
  for (let i = 0; i < 3; i++) {
    fx.advance(1_000);
    expect(fx.agent.onKernelLine(line(31, 'MMU Fault'))).toEqual([]);
  }
  fx.advance(7_000);
  const out = (await fx.agent.sampleOnce()).filter((e) => e.detailType === 'GPU XID Error');
  expect(xids(out)).toEqual([[31, 3]]);
  expect(out[0]!.detail.countWindowMs).toBe(10_000);
  for (const e of out) expect(validateDetail(e.detailType, e.detail)).toMatchObject({ ok: true });
});

it('sends the held repeats when their window closes while NVML sampling fails (a wedged driver)', async () => {
  fx = await startAgent(oneGpu(), { pids: [4242], overrides: { watchEvents: false } });
  await fx.agent.sampleOnce();
  fx.agent.onKernelLine(line(13, 'Graphics Exception'));
  for (let i = 0; i < 4; i++) {
    fx.advance(100);
    expect(fx.agent.onKernelLine(line(13, 'Graphics Exception'))).toEqual([]);
  }
  // The driver goes away: every sample fails from here on, and the GPU logs no further XID.
  fx.nvml.close();
  fx.advance(XID_AGGREGATE_WINDOW_MS);
  const out = await fx.agent.sampleOnce();
  expect(xids(out)).toEqual([[13, 4]]);
});
