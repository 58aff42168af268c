import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { UsageError, type CliIo } from '../../events/cli-kit/command.ts';
import { startKubeSim } from '../../infra/local/kube/index.ts';
import { main } from '../../bin/main.ts';
import { createMigPlanCommand, migLayoutsCommand, migValidateCommand, parseLayout } from './cli.ts';

function capture(): CliIo & { stdout: string[]; stderr: string[] } {
  const stdout: string[] = [];
  const stderr: string[] = [];
  return { stdout, stderr, out: (l) => stdout.push(l), err: (l) => stderr.push(l) };
}

const run = async (...args: string[]) => {
  const io = capture();
  const code = await main(args, io, {});
  return { code, out: io.stdout.join('\n'), err: io.stderr.join('\n') };
};

describe('gpu-reflex mig layouts / validate for the GPUs sold for ACK', () => {
  it.each([
    ['NVIDIA-H20', 'H20-96GB', '4g.48gb,3g.48gb'],
    ['NVIDIA-A800-SXM4-40GB', 'A800-40GB', '4g.20gb,3g.20gb'],
    ['NVIDIA-A800-SXM4-80GB', 'A800-80GB', '4g.40gb,3g.40gb'],
    ['NVIDIA-H800', 'H800-80GB', '4g.40gb,3g.40gb'],
    ['NVIDIA-GH200-480GB', 'GH200-96GB', '4g.48gb,3g.48gb'],
    ['NVIDIA-GH200-144G-HBM3e', 'GH200-144GB', '4g.72gb,3g.72gb'],
    ['NVIDIA-GB200', 'GB200', '4g.93gb,3g.93gb'],
  ])("--model %s (the nvidia.com/gpu.product value) lists NVIDIA's layouts", async (product, model, full) => {
    const layouts = await run('mig', 'layouts', '--model', product, '--zero-waste', '--json');
    expect(layouts.code).toBe(0);
    expect((JSON.parse(layouts.out) as unknown[]).length).toBe(17);
    const v = await run('mig', 'validate', '--model', product, full);
    expect(v.code).toBe(0);
    expect(v.out).toContain(`valid on ${model}:`);
  });
});

describe('gpu-reflex mig validate', () => {
  it('exits 0 for a valid layout and shows where each instance sits', async () => {
    const r = await run('mig', 'validate', '--model', 'A100-80GB', '3g.40gb,2g.20gb,1g.10gb');
    expect(r.code).toBe(0);
    expect(r.out).toContain('valid on A100-80GB: 3g.40gb + 2g.20gb + 1g.10gb');
    expect(r.out).toContain('memory slices  AAAABBC·  (7 of 8 used)');
    expect(r.out).toMatch(/C {2}1g\.10gb\s+start 6, 1 slice {2}nvidia\.com\/mig-1g\.10gb/);
    expect(r.out).toContain('compute slices 6 of 7; unused: 1 compute, 1 memory');
  });

  it('exits 1 for an invalid layout and says exactly why', async () => {
    const r = await run('mig', 'validate', '--model', 'NVIDIA H100 80GB HBM3', '4g.40gb,4g.40gb');
    expect(r.code).toBe(1);
    expect(r.out.split('\n')).toEqual([
      'invalid on H100-80GB: 2×4g.40gb',
      '  - 2 × 4g.40gb: an H100-80GB GPU holds at most 1',
      '  - compute slices 4+4 = 8: an H100-80GB GPU has 7',
    ]);
  });

  it('takes repeats as 2x1g.10gb or 1g.10gb:2, and answers JSON', async () => {
    const r = await run('mig', 'validate', '--model', 'A100-80GB', '2x1g.10gb,3g.40gb,2g.20gb:1', '--json');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.out)).toMatchObject({
      model: 'A100-80GB',
      valid: true,
      waste: { compute: 0, memory: 0 },
      layout: ['1g.10gb', '1g.10gb', '3g.40gb', '2g.20gb'],
    });
    const bad = await run('mig', 'validate', '--model', 'A100-80GB', '1g.5gb', '--json');
    expect(bad.code).toBe(1);
    expect(JSON.parse(bad.out)).toMatchObject({
      valid: false,
      problems: [expect.stringContaining('1g.5gb is not a MIG profile of A100-80GB')],
    });
  });

  it('exits 2 naming the known models for an unknown one, and for a missing layout', async () => {
    const r = await run('mig', 'validate', '--model', 'V100', '1g.5gb');
    expect(r.code).toBe(2);
    expect(r.err).toContain(
      '--model "V100" is not a MIG-capable model gpu-reflex knows (A100-40GB, A100-80GB, H100-80GB',
    );
    expect((await run('mig', 'validate', '--model', 'A100-80GB')).err).toContain('expected the LAYOUT to check');
    expect((await run('mig', 'validate', '3g.40gb')).err).toContain('--model MODEL is required');
  });

  it('reads layouts people write, and refuses the rest with the entry named', () => {
    expect(parseLayout('3g.40gb, 2x1g.10gb,1g.10gb:2')).toEqual([
      '3g.40gb',
      '1g.10gb',
      '1g.10gb',
      '1g.10gb',
      '1g.10gb',
    ]);
    expect(() => parseLayout('3g.40gb,,1g.10gb')).toThrow(/an empty entry between commas/);
    expect(() => parseLayout('0x1g.10gb')).toThrow(/layout entry "0x1g.10gb": the count must be 1 to 64/);
  });
});

describe('gpu-reflex mig layouts', () => {
  it('lists every layout, or only the zero-waste ones', async () => {
    const all = await run('mig', 'layouts', '--model', 'A100-40GB', '--json');
    expect(all.code).toBe(0);
    const layouts = JSON.parse(all.out) as string[][];
    expect(layouts).toContainEqual(['4g.20gb', '3g.20gb']);
    const zero = await run('mig', 'layouts', '--model', 'A100-40GB', '--zero-waste');
    expect(zero.out).toContain('7g.40gb');
    expect(zero.out).not.toContain('unused 1');
    const n = Number(/(\d+) layouts on A100-40GB with zero waste/.exec(zero.out)?.[1]);
    expect(n).toBeGreaterThan(0);
    expect(n).toBeLessThan(layouts.length);
  });
});

const FLEET = new URL('../../infra/local/scenarios/fleets/h100-mig.yaml', import.meta.url).pathname;

describe('gpu-reflex mig plan', () => {
  it('plans on a fleet file: the idle GPU relaid for the pods waiting on 3g.40gb, the busy ones left', async () => {
    const r = await run('mig', 'plan', '--fleet', FLEET);
    expect(r.code).toBe(0);
    const lines = r.out.split('\n');
    expect(lines[0]).toMatch(/^GPU\s+FROM\s+TO\s+UNBLOCKS\s+DISRUPTS$/);
    expect(lines[1]).toMatch(/^h100-0\/2\s+7×1g\.10gb\s+2×3g\.40gb\s+ml-train\/finetune-0, ml-train\/finetune-1\s+-$/);
    expect(r.out).toContain('pending MIG pods that can run: 0 now, 2 after 1 GPU change');
    const json = JSON.parse((await run('mig', 'plan', '--fleet', FLEET, '--json')).out) as {
      changes: { node: string; gpu: number; to: string[] }[];
      notes: string[];
    };
    expect(json.changes.map((c) => `${c.node}/${c.gpu}`)).toEqual(['h100-0/2']);
    expect(json.notes).toEqual([]);
  });

  it("plans on a live cluster, reading only, and relays nothing on a node whose pods' GPUs it cannot know", async () => {
    const sim = await startKubeSim({ fleet: FLEET });
    try {
      sim.tick();
      const kubeconfig = join(mkdtempSync(join(tmpdir(), 'mig-plan-')), 'kubeconfig');
      sim.writeKubeconfig(kubeconfig);
      const before = JSON.stringify(sim.store.list('nodes'));
      const r = await run('mig', 'plan', '--kubeconfig', kubeconfig);
      expect(r.code).toBe(0);
      expect(r.out).toContain('no GPU to relay');
      expect(r.out).toContain(
        'note: h100-0: 10 pod(s) use MIG instances there, but not which GPUs: none of its GPUs will be relaid',
      );
      expect(r.out).toMatch(/still pending ml-train\/finetune-0: 3g\.40gb: every GPU that could be relaid/);
      expect(JSON.stringify(sim.store.list('nodes'))).toBe(before);
    } finally {
      await sim.close();
    }
  });

  it('plans with the MIG policy given, preemption included, and names a bad policy file', async () => {
    const notebooks = FLEET.replace(/h100-mig\.yaml$/, 'h100-notebooks.yaml');
    const off = await run('mig', 'plan', '--fleet', notebooks);
    expect(off.code).toBe(0);
    expect(off.out).toContain('no GPU to relay');
    const dir = mkdtempSync(join(tmpdir(), 'mig-policy-'));
    const policy = join(dir, 'mig-policy.yaml');
    writeFileSync(policy, 'preemption: { enabled: true, minPriorityGap: 1000, maxGpusPerRound: 1 }\n');
    const on = await run('mig', 'plan', '--fleet', notebooks, '--policy', policy);
    expect(on.code).toBe(0);
    expect(on.out.split('\n')[1]).toMatch(/^h100-nb-0\/1\s+7g\.80gb\s+.*1g\.10gb.*notebook-big-0$/);
    const bad = join(dir, 'bad.yaml');
    writeFileSync(bad, 'preemption: { enabled: maybe }\n');
    const refused = await run('mig', 'plan', '--fleet', notebooks, '--policy', bad);
    // A malformed file is bad input (1), not bad usage (2): the command line was right (issue #31).
    expect(refused.code).toBe(1);
    expect(refused.err).toContain(`--policy: ${bad}`);
  });

  it('needs exactly one of --fleet and --kubeconfig', async () => {
    expect((await run('mig', 'plan')).code).toBe(2);
    expect((await run('mig', 'plan', '--fleet', FLEET, '--kubeconfig', FLEET)).err).toContain(
      'give exactly one of --fleet FILE or --kubeconfig FILE',
    );
    const missing = await run('mig', 'plan', '--fleet', '/nonexistent/fleet.yaml');
    expect(missing.code).toBe(1);
    expect(missing.err).toContain('/nonexistent/fleet.yaml');
  });
});

describe('gpu-reflex mig layouts, plan and validate usage', () => {
  const unread = () => Promise.reject(new Error('a refused command reads no fleet'));
  it.each([
    ['layouts', '--model A100-80GB --bogus'],
    ['layouts', '--model'],
    ['layouts', '--model A100-80GB extra'],
    ['plan', '--fleet f --bogus'],
    ['plan', '--fleet'],
    ['validate', '--model A100-80GB 3g.40gb --bogus'],
    ['validate', '3g.40gb --model'],
  ])('mig %s refuses `%s` as a UsageError, not a raw TypeError', async (which, line) => {
    const command =
      which === 'layouts'
        ? migLayoutsCommand
        : which === 'validate'
          ? migValidateCommand
          : createMigPlanCommand(unread);
    await expect(command.run(line.split(' '), capture())).rejects.toThrow(UsageError);
  });
});
