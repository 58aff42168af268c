import { beforeAll, describe, expect, it } from 'vitest';
import type { StackResult } from '../../infra/local/stack.ts';
import { lineAt, simulateScenario } from './scenario-run.ts';
import { HISTORY_ANNOTATION } from '../../functions/remediate/core/state.ts';
import type { Pod } from '../../infra/local/kube/types.ts';

/**
 * Issue #32, ACK cGPU on the embedded stack (infra/local/scenarios/sharing-cgpu.yaml): the simulated
 * scheduler plays ACK's gpushare extender and plugin (infra/local/kube/gpushare.ts). A hardware XID on
 * card 1 of a 2-card node moves only card 1's tenants; card 1 is fenced through ConfigMap
 * kube-system/unhealthy-gpu-<node>, verified, and unlisted after the reset and probe; card 0 keeps
 * serving and takes the new pods; a person's clearing of the ConfigMap is reported and undone. An
 * application XID whose pid names no pod moves no tenant.
 */
describe('gpu-reflex simulate, sharing-cgpu scenario', () => {
  let result: StackResult;
  const lines: string[] = [];
  beforeAll(async () => {
    result = await simulateScenario('sharing-cgpu.yaml', lines);
  }, 120_000);

  const at = (re: RegExp) => lineAt(lines, re);
  const card = (p: Pod) => p.metadata.annotations?.['ALIYUN_COM_GPU_MEM_IDX'];
  const byName = (pods: readonly Pod[]) => Object.fromEntries(pods.map((p) => [p.metadata.name, card(p)]));
  type Step = { kind: string; result: string; message?: string };
  const remediations = () => result.report.actions.filter((a) => a.detailType === 'Remediation');

  it('meets every expectation of the scenario', () => {
    expect(result.report.summary.expectations?.filter((x) => !x.ok)).toEqual([]);
    expect(result.report.summary.expectations?.length).toBe(3);
  });

  it('starts with keep and filler on card 0 and both chat replicas on card 1 (binpack)', () => {
    expect(byName(result.report.initial.pods)).toEqual({
      'keep-0': '0',
      'filler-0': '0',
      'chat-0': '1',
      'chat-1': '1',
    });
  });

  it('moves no tenant for an application XID whose pid names no pod: one incident, workload unknown', () => {
    const [app] = remediations();
    expect(app!.detail.action).toBe('restart-workload');
    expect((app!.detail.steps as Step[]).some((s) => s.kind === 'evict')).toBe(false);
    expect(lines.some((l) => /pod ml-(infer\/keep|batch\/filler)-0 terminating/.test(l))).toBe(false);
    expect(lines.join('\n')).toMatch(/one\s+incident of an unknown workload/);
  });

  it("evicts only card 1's tenants and fences card 1 in the gpushare ConfigMap, never the ACK file", () => {
    const quarantine = remediations().find((a) => a.detail.action === 'quarantine-gpu')!;
    const steps = quarantine.detail.steps as Step[];
    expect(steps.filter((s) => s.kind === 'evict').length).toBe(2);
    expect(steps.find((s) => s.kind === 'fence')).toMatchObject({
      result: 'done',
      message: 'card 1 listed in ConfigMap kube-system/unhealthy-gpu-a10-share-0 (gpus)',
    });
    const terminating = lines.filter((l) => / terminating on a10-share-0/.test(l)).map((l) => /pod (\S+)/.exec(l)![1]);
    expect(terminating.sort()).toEqual(['ml-infer/chat-0', 'ml-infer/chat-1']);
    expect(at(/configmap kube-system\/unhealthy-gpu-a10-share-0 gpus "" → "1"/)).toBe(60);
    // No fence file on a sharing node: the agent is asked for no fence, only the repair.
    expect(lines.some((l) => /GPU Action Result\s+(fence|unfence)/.test(l))).toBe(false);
    expect(lines.some((l) => /node a10-share-0 (cordoned|tainted)/.test(l))).toBe(false);
  });

  it('keeps card 0 serving: the replacements land on card 0, a pod that fits only card 1 waits for its return', () => {
    const replaced = lines.filter((l) => /rescheduled on a10-share-0/.test(l));
    expect(replaced).toHaveLength(2);
    for (const l of replaced) expect(l).toMatch(/rescheduled on a10-share-0 card 0 \(replaces ml-infer\/chat-[01]\)/);
    const pending = at(/1 pod pending on aliyun\.com\/gpu-mem/);
    const probed = at(/a10-share-0\s+GPU Action Result\s+probe probe passed/);
    // The last unlisting is the restore's (a person's clearing comes first: the drift test).
    const unlistings = lines.filter((l) => /configmap kube-system\/unhealthy-gpu-a10-share-0 gpus "1" → ""/.test(l));
    const unlisted = lineAt(unlistings.slice(-1), /./);
    const big = at(/pod ml-infer\/big scheduled on a10-share-0 card 1/);
    expect(pending).toBe(170);
    expect(probed).toBeLessThanOrEqual(unlisted);
    expect(unlisted).toBeLessThanOrEqual(big);
    const final = byName(result.report.final.pods);
    expect(final['keep-0']).toBe('0');
    expect(final['big']).toBe('1');
  });

  it('reports a fence someone removed by hand and lists the card again, keeping the fence verified', () => {
    const cleared = at(/a person rewrites kube-system\/unhealthy-gpu-a10-share-0: sets gpus to ""/);
    const text = lines.join('\n');
    expect(text).toMatch(
      /no\s+longer holds: someone took it out of\s+kube-system\/unhealthy-gpu-a10-share-0; listing it\s+again/,
    );
    const relisted = lines.findIndex((l) => /gpus "" → "1"/.test(l) && lineAt([l], /./) === cleared);
    expect(relisted).toBeGreaterThan(0);
    expect(text).toMatch(/holds\s+again:\s+kube-system\/unhealthy-gpu-a10-share-0 lists it/);
    expect(lines.some((l) => /node a10-share-0 tainted/.test(l))).toBe(false);
  });

  it('records the fence as verified by identity, and lifts it only after the reset and the passed probe', () => {
    const node = result.report.final.nodes.find((n) => n.metadata.name === 'a10-share-0')!;
    const history = JSON.parse(node.metadata.annotations?.[HISTORY_ANNOTATION] ?? '{}') as {
      incidents: { xid?: number; fence?: Record<string, unknown>; unfencedAt?: string; probedAt?: string }[];
    };
    const hw = history.incidents.find((i) => i.xid === 95)!;
    expect(hw).toMatchObject({
      fence: { backend: 'ack-cgpu', verifiedAt: expect.any(String), listedBefore: false },
      probedAt: expect.any(String),
      unfencedAt: expect.any(String),
    });
    expect(Date.parse(hw.unfencedAt!)).toBeGreaterThanOrEqual(Date.parse(hw.probedAt!));
  });
});
