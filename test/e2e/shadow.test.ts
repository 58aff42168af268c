/**
 * `gpu-reflex shadow` (issue #31): a recorded incident — the storm scenario's three XID 79s — is
 * replayed through the functions of serverless.yml against a cluster (the simulated one, standing in
 * for yours); the command prints what gpu-reflex would have done and changes nothing: the cluster's
 * resourceVersion is the same after as before. Its own file: the functions wire themselves once per
 * process, and the dry-run overlay is per process too.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commands } from '../../bin/main.ts';
import type { EventEnvelope } from '../../infra/local/bus/index.ts';
import { startKubeSim, type KubeSim } from '../../infra/local/kube/index.ts';
import { loadScenario } from '../../infra/local/scenario.ts';
import { REPO_ROOT } from '../../infra/local/stack-env.ts';
import { shadowText, type ShadowResult } from '../../infra/local/shadow.ts';

const example = JSON.parse(
  readFileSync(join(REPO_ROOT, 'events/catalog/gpu-xid-error.example.json'), 'utf8'),
) as EventEnvelope & { detail: Record<string, unknown> };

/** The agent's XID 79 on `node`'s GPU `index` at `time`, as the bus recorded it. */
function xid79(node: string, index: number, time: string): EventEnvelope {
  const uuid = `GPU-0000000${index}-0000-4000-8000-00000000000${node.slice(-1)}`;
  const { holders: _h, ...detail } = example.detail;
  return {
    ...example,
    id: `00000000-0000-4000-8000-00000000000${node.slice(-1)}`,
    time,
    resources: [],
    detail: {
      ...detail,
      eventId: `xid:${node}:${uuid}:79:${Date.parse(time)}`,
      node,
      observedAt: time,
      gpu: { index, uuid, pciBusId: `00000000:0${index}:00.0`, name: 'Tesla T4' },
      pods: [],
      message: `NVRM: Xid (PCI:0000:0${index}:00): 79, GPU has fallen off the bus.`,
    },
  };
}

describe('gpu-reflex shadow', () => {
  let sim: KubeSim;
  let dir: string;
  beforeAll(async () => {
    sim = await startKubeSim({ fleet: loadScenario(join(REPO_ROOT, 'infra/local/scenarios/storm.yaml')).parsedFleet });
    dir = mkdtempSync(join(tmpdir(), 'gpu-reflex-shadow-'));
    sim.writeKubeconfig(join(dir, 'kubeconfig'));
    const recorded = [
      xid79('t4-0', 0, '2026-12-04T03:00:05.000Z'),
      xid79('t4-1', 1, '2026-12-04T03:00:06.000Z'),
      xid79('t4-2', 0, '2026-12-04T03:00:07.000Z'),
    ];
    writeFileSync(join(dir, 'events.jsonl'), recorded.map((e) => JSON.stringify(e)).join('\n') + '\n');
  });
  afterAll(async () => sim.close());

  it('prints what the storm would have done, hour by hour, and changes nothing in the cluster', async () => {
    const rvBefore = sim.store.resourceVersion;
    const nodesBefore = sim.store.list('nodes').map((n) => `${n.metadata.name}@${n.metadata.resourceVersion}`);
    const shadow = await commands.find((c) => c.path.join(' ') === 'shadow')!.load();
    const out: string[] = [];
    const err: string[] = [];
    const code = await shadow.run(
      [
        '--kubeconfig',
        join(dir, 'kubeconfig'),
        '--events',
        join(dir, 'events.jsonl'),
        '--serverless',
        join(REPO_ROOT, 'serverless.yml'),
        '--settle',
        '1m',
        '--json',
      ],
      { out: (l) => void out.push(l), err: (l) => void err.push(l) },
    );
    expect(code, err.join('\n')).toBe(0);
    const r = JSON.parse(out.join('\n')) as ShadowResult;
    expect(r.replayed).toBe(3);
    // The live storm: t4-0 drained, t4-1 and t4-2 held for approval by the blast-radius limit.
    const remediations = r.decisions.filter((d) => d.detailType === 'Remediation');
    const by = (node: string) =>
      remediations.filter((d) => (d.detail as { target: { node: string } }).target.node === node);
    expect(by('t4-0').map((d) => d.text)).toContainEqual(expect.stringMatching(/^drain-node would act/));
    expect(by('t4-1').map((d) => d.text)).toContainEqual(expect.stringMatching(/would wait for approval/));
    expect(by('t4-2').map((d) => d.text)).toContainEqual(expect.stringMatching(/would wait for approval/));
    for (const d of remediations) expect((d.detail as { dryRun: boolean }).dryRun).toBe(true);
    // Every write was refused at the port and listed: t4-0's cordon among them.
    expect(r.refusedWrites.map((w) => `${w.op} ${w.target}`)).toContainEqual(expect.stringMatching(/t4-0/));
    expect(r.failedDeliveries).toEqual([]);
    expect(r.dropped).toEqual([]);
    // In words: the decisions under their hour, the refused writes, and one last line.
    const text = shadowText(r);
    expect(text).toContain('2026-12-04T03:00Z');
    expect(text.find((l) => / t4-0 | Remediation: drain-node would act/.test(l))).toBeDefined();
    expect(text.at(-1)).toMatch(/^shadow: \d+ decisions, \d+ writes refused; nothing in the cluster changed$/);
    // Nothing in the cluster changed.
    expect(sim.store.resourceVersion).toBe(rvBefore);
    expect(sim.store.list('nodes').map((n) => `${n.metadata.name}@${n.metadata.resourceVersion}`)).toEqual(nodesBefore);
  }, 120_000);

  it('says what is wrong with an events file, naming the line', async () => {
    writeFileSync(
      join(dir, 'bad.jsonl'),
      `${JSON.stringify(xid79('t4-0', 0, '2026-12-04T03:00:05.000Z'))}\nnot json\n`,
    );
    const shadow = await commands.find((c) => c.path.join(' ') === 'shadow')!.load();
    await expect(
      shadow.run(['--kubeconfig', join(dir, 'kubeconfig'), '--events', join(dir, 'bad.jsonl')], {
        out: () => {},
        err: () => {},
      }),
    ).rejects.toThrow(`${join(dir, 'bad.jsonl')}:2: not a JSON event`);
  });
});
