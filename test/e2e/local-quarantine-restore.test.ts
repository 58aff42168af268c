import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadScenario } from '../../infra/local/scenario.ts';
import { startStack, type StackResult } from '../../infra/local/stack.ts';
import { REPO_ROOT } from '../../infra/local/stack-env.ts';

/**
 * Six hours of the quarantine-restore scenario under `simulate`, its clock started (startAt) years
 * away from today: quiet period, restore by the minute sweep, an escalation window expiring.
 * It replays in seconds because the stack jumps over quiet periods, and every time the functions
 * wrote (event times, the node's history) is virtual: none of it read the wall clock.
 */
const START = Date.UTC(2041, 5, 1);
const HOURS_6 = 6 * 3_600_000;
const ISO = /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z/g;

describe('gpu-reflex simulate, quarantine-restore scenario (6 h)', () => {
  let result: StackResult;
  beforeAll(async () => {
    const scenario = loadScenario(join(REPO_ROOT, 'infra/local/scenarios/quarantine-restore.yaml'));
    result = await (await startStack(scenario, { clock: 'virtual', out: () => undefined })).run();
  }, 120_000);

  it('meets every expectation of the scenario', () => {
    expect(result.report.summary.expectations?.length).toBe(4);
    expect(result.report.summary.expectations?.filter((x) => !x.ok)).toEqual([]);
    expect(result.exitCode).toBe(0);
  });

  it('quarantines on the third XID 8, restores only after the agent reset and probed the GPU, and only observes XIDs 90 min apart', () => {
    const remediations = result.report.actions
      .filter((a) => a.detailType === 'Remediation')
      .map((a) => `${a.atMs / 60_000}m ${String(a.detail.action)} ${String(a.detail.phase)}`);
    expect(remediations).toEqual([
      '1m restart-workload acted',
      '4m restart-workload acted',
      '7m quarantine-gpu acted',
      // fenced at 7m05 by the agent (its answer moves the repair on at once: remediate-gpu-action);
      // the reset asked while the evicted pods were still in their grace period is refused busy and
      // asked again once they are gone, and the probe (30 s) passes at 10.5m; the reset destroyed the
      // MIG GPU's instances, so mig-manager's pod is restarted then, and the GPU is restored once it
      // applied the node's config again and the agent lists the instances: the node's allocatable
      // changing then has the agent answer its held fence again (fence-hold), which moves the repair
      // on at once instead of at the 12m sweep
      '10.5m quarantine-gpu acted',
      '11.5m restore restored',
      '180m observe acted',
      // 90 min after the last one: outside the 60 min escalation window, so no escalation
      '270m observe acted',
    ]);
  });

  it('the agent fenced, reset (once refused while the evicted pods still held the GPU), probed and unfenced the GPU, in that order', () => {
    const answers = result.report.events
      .filter((e) => (e.event as { 'detail-type': string })['detail-type'] === 'GPU Action Result')
      .map((e) => (e.event as unknown as { detail: { action: string; state: string; eventId: string } }).detail);
    // The agent answers a held fence again when its Node's allocatable changes (fence-hold.ts): those
    // re-answers are the fence's, never another step's.
    const again = answers.filter((d) => d.eventId.includes(':allocatable-'));
    expect(again.length).toBeGreaterThan(0);
    expect(again.every((d) => d.action === 'fence' && d.state === 'done')).toBe(true);
    expect(answers.filter((d) => !again.includes(d)).map((d) => `${d.action} ${d.state}`)).toEqual([
      'fence done',
      'reset failed',
      'reset done',
      'probe done',
      'unfence done',
    ]);
  });

  it('runs all six hours of scenario time', () => {
    expect(result.report.scenario.durationSeconds).toBe(HOURS_6 / 1000);
  });

  it('keeps every event time and every time in the node history inside the virtual run', () => {
    const inRun = (iso: string) => Date.parse(iso) >= START && Date.parse(iso) <= START + HOURS_6 + 60_000;
    const times = result.report.events.map((e) => (e.event as { time: string }).time);
    expect(times.length).toBeGreaterThan(100);
    expect(times.filter((t) => !inRun(t))).toEqual([]);
    const remediationTimes = result.report.actions
      .filter((a) => a.detailType === 'Remediation')
      .map((a) => String(a.detail.occurredAt));
    expect(remediationTimes).toHaveLength(7);
    expect(remediationTimes.filter((t) => !inRun(t))).toEqual([]);
    const node = result.report.final.nodes.find((n) => n.metadata.name === 'h100-mig-0')!;
    const history = node.metadata.annotations?.['gpu-reflex.io/history'] ?? '';
    const historyTimes = history.match(ISO) ?? [];
    expect(historyTimes.length).toBeGreaterThan(0);
    expect(historyTimes.filter((t) => !inRun(t))).toEqual([]);
  });
});
