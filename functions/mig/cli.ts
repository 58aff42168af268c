/**
 * `gpu-reflex mig validate` (is this one GPU's MIG layout possible on that model, and where would
 * each instance sit), `gpu-reflex mig layouts` (every layout one GPU of a model can hold) — both
 * read only the built-in catalog (functions/lib/mig-profiles.ts, facts in docs/mig.md) — and
 * `gpu-reflex mig plan` (which idle GPUs to relay for the pending MIG pods of a fleet file or a
 * live cluster; it changes nothing).
 */
import { InputError, UsageError, type Command } from '../../events/cli-kit/command.ts';
import { parseFlags, parseFlagsAndArgs } from '../../events/cli-kit/flags.ts';
import { readInputText } from '../../events/cli-kit/input.ts';
import type { NodeInfo, PodInfo } from '../adapters/kube/model.ts';
import { checkLayout, enumerateLayouts, layoutWords, waste, type LayoutCheck } from './core/layout.ts';
import { planMig } from './core/planner.ts';
import { MigPolicyError, parseMigPolicy } from './core/policy.ts';
import { planTable } from './core/plan-table.ts';
import type { MigUsage } from './supply.ts';

export { planTable };
import { knownModelNames, migModel, migResourceName, type MigModel } from '../lib/mig-profiles.ts';

function modelFrom(name: string | undefined): MigModel {
  if (!name)
    throw new UsageError(
      `--model MODEL is required (one of ${knownModelNames().join(', ')}, or an NVML product name such as "NVIDIA ` +
        `A100-SXM4-80GB")`,
    );
  const m = migModel(name);
  if (!m)
    throw new UsageError(
      `--model ${JSON.stringify(name)} is not a MIG-capable model gpu-reflex knows (${knownModelNames().join(', ')}; ` +
        `NVML product names such as "NVIDIA H100 80GB HBM3" work too)`,
    );
  return m;
}

/** `3g.40gb,2g.20gb,1g.10gb`, `2x1g.10gb,3g.40gb` or `1g.10gb:2` → one name per instance. */
export function parseLayout(text: string): string[] {
  const out: string[] = [];
  for (const raw of text.split(',').map((s) => s.trim())) {
    if (raw === '') throw new UsageError(`layout ${JSON.stringify(text)}: an empty entry between commas`);
    const m = /^(?:(\d+)\s*[x×*]\s*)?([^:\s]+?)(?::(\d+))?$/.exec(raw);
    if (!m) throw new UsageError(`layout entry ${JSON.stringify(raw)}: expected PROFILE, NxPROFILE or PROFILE:N`);
    const n = Number(m[1] ?? m[3] ?? 1);
    if (!Number.isInteger(n) || n < 1 || n > 64)
      throw new UsageError(`layout entry ${JSON.stringify(raw)}: the count must be 1 to 64`);
    for (let i = 0; i < n; i++) out.push(m[2]!);
  }
  return out;
}

function placementMap(model: MigModel, check: Extract<LayoutCheck, { valid: true }>): string {
  const cells: string[] = Array.from({ length: model.memorySlices }, () => '·');
  check.placement.forEach((p, i) => {
    for (let s = p.start; s < p.start + p.size; s++) cells[s] = String.fromCharCode(65 + i);
  });
  return cells.join('');
}

export const migValidateCommand: Command = {
  path: ['mig', 'validate'],
  summary: "check one GPU's MIG layout against its model: valid (and where each instance sits) or why not",
  help: [
    'Usage: gpu-reflex mig validate --model MODEL LAYOUT [--json]',
    '',
    'Checks whether one GPU of MODEL can hold LAYOUT, the way NVIDIA places GPU instances: every',
    "instance at one of its profile's allowed starts on the memory slices, no overlap, compute",
    "slices within the GPU's, per-profile maxima, at most one +me instance. Exit code 0 when it is",
    'valid (prints where each instance sits), 1 when it is not (prints every reason), 2 for bad usage.',
    '  --model MODEL  A100-40GB, A100-80GB, A800-40GB, A800-80GB, H100-80GB, H100-NVL, H800-80GB,',
    '                 H20-96GB, GH200-96GB, GH200-144GB, H200-141GB, B200, GB200, A30-24GB, or an NVML',
    '                 product name / the nvidia.com/gpu.product label value ("NVIDIA-H20")',
    '  LAYOUT         profiles, comma-separated; repeats as 2x1g.10gb or 1g.10gb:2',
    '  --json         print the result as JSON',
    '',
    'Examples:',
    '  gpu-reflex mig validate --model A100-80GB 3g.40gb,2g.20gb,1g.10gb',
    '  gpu-reflex mig validate --model "NVIDIA H100 80GB HBM3" 4g.40gb,3g.40gb',
    '  gpu-reflex mig validate --model NVIDIA-H20 3g.48gb,2g.24gb,1g.12gb',
  ].join('\n'),
  async run(args, io) {
    const { values, positionals } = parseFlagsAndArgs(args, { model: { type: 'string' }, json: { type: 'boolean' } });
    const model = modelFrom(values.model);
    if (positionals.length !== 1)
      throw new UsageError(
        positionals.length === 0
          ? 'expected the LAYOUT to check, e.g. 3g.40gb,2g.20gb,1g.10gb'
          : `expected one LAYOUT, got ${positionals.length} (separate profiles with commas, no spaces)`,
      );
    const profiles = parseLayout(positionals[0]!);
    const check = checkLayout(model, profiles);
    if (values.json) {
      io.out(
        JSON.stringify(
          { model: model.name, layout: profiles, ...check, ...(check.valid ? { waste: waste(model, check) } : {}) },
          null,
          2,
        ),
      );
      return check.valid ? 0 : 1;
    }
    const words = layoutWords(profiles);
    if (!check.valid) {
      io.out(`invalid on ${model.name}: ${words}`);
      for (const p of check.problems) io.out(`  - ${p}`);
      return 1;
    }
    const w = waste(model, check);
    io.out(`valid on ${model.name}: ${words}`);
    io.out(`  memory slices  ${placementMap(model, check)}  (${check.memorySlices} of ${model.memorySlices} used)`);
    check.placement.forEach((p, i) =>
      io.out(
        `  ${String.fromCharCode(65 + i)}  ${p.profile.padEnd(12)} start ${p.start}, ${p.size} ` +
          `slice${p.size === 1 ? '' : 's'}  ${migResourceName(p.profile)}`,
      ),
    );
    io.out(
      `  compute slices ${check.computeSlices} ` +
        `of ${model.computeSlices}${
          w.compute === 0 && w.memory === 0 ? '; zero waste' : `; unused: ${w.compute} compute, ${w.memory} memory`
        }`,
    );
    if (model.expected)
      io.out(
        `  (${model.name}'s table is expected, not seen on hardware: the node agent's NVML report is the authority)`,
      );
    return 0;
  },
};

export const migLayoutsCommand: Command = {
  path: ['mig', 'layouts'],
  summary: 'list every MIG layout one GPU of a model can hold',
  help: [
    'Usage: gpu-reflex mig layouts --model MODEL [--zero-waste] [--json]',
    '',
    'Every valid layout of one GPU of MODEL (instances largest first), each once, with its unused',
    'compute and memory slices. The planner picks from these.',
    '  --model MODEL   as for gpu-reflex mig validate',
    '  --zero-waste    only layouts that use every compute and memory slice',
    '  --json          one JSON array of layouts (each an array of profile names)',
  ].join('\n'),
  async run(args, io) {
    const values = parseFlags(args, {
      model: { type: 'string' },
      'zero-waste': { type: 'boolean' },
      json: { type: 'boolean' },
    });
    const model = modelFrom(values.model);
    const rows = enumerateLayouts(model)
      .map((layout) => {
        const check = checkLayout(model, layout);
        return { layout, waste: check.valid ? waste(model, check) : { compute: NaN, memory: NaN } };
      })
      .filter((r) => !values['zero-waste'] || (r.waste.compute === 0 && r.waste.memory === 0));
    if (values.json) {
      io.out(JSON.stringify(rows.map((r) => r.layout)));
      return 0;
    }
    for (const r of rows)
      io.out(`${layoutWords(r.layout).padEnd(48)}  unused ${r.waste.compute} compute, ${r.waste.memory} memory`);
    io.out(
      `${rows.length} layout${rows.length === 1 ? '' : 's'} ` +
        `on ${model.name}${values['zero-waste'] ? ' with zero waste' : ''}`,
    );
    return 0;
  },
};

/**
 * A fleet file as the simulated cluster seeds and schedules it (`--fleet`): nodes and pods in the
 * adapters' types, and which GPU instance each running pod holds. The fleet file is the simulated
 * cluster's format, so the reader is the local stack's (infra/local/mig-fleet.ts), handed in where
 * the CLI wires its commands (bin/main.ts): nothing in functions/ imports the simulators
 * (test/contract/layers.test.ts).
 */
export type MigFleetReader = (path: string) => Promise<{
  nodes: NodeInfo[];
  pods: PodInfo[];
  usage: MigUsage;
  /** Each GPU's layout as the fleet holds it (what a node agent's inventory would say). */
  layouts: MigUsage;
}>;

export const createMigPlanCommand = (readFleet: MigFleetReader): Command => ({
  path: ['mig', 'plan'],
  summary:
    'print which idle MIG GPUs to relay so pending MIG pods can run (fleet file or live cluster; changes nothing)',
  help: [
    'Usage: gpu-reflex mig plan (--fleet FILE | --kubeconfig FILE) [--policy FILE] [--json]',
    '',
    'Reads the MIG nodes (mixed strategy) and the pending pods asking for nvidia.com/mig-<profile>,',
    'and prints the plan as a table: GPU, its layout now, the layout it would get, the pods that',
    'would run on it, the pods it would disrupt (none unless the policy allows preemption: without',
    'it a GPU with an instance in use is never relaid). Then why each GPU was chosen and why the',
    'pods left pending stay so. Changes nothing.',
    '  --fleet FILE       a fleet file (infra/local/kube/fleet.ts format), as the simulated cluster',
    '                     seeds and schedules it; which GPU each pod holds is known exactly',
    "  --kubeconfig FILE  a live cluster (reads nodes and pods); without the node agent's inventory",
    '                     a node that runs MIG pods has none of its GPUs relaid, and the plan says so',
    '  --policy FILE      the MIG policy rebalance-mig runs with (MIG_POLICY_FILE, YAML or JSON;',
    '                     docs/mig.md "Preemption"): plan as it would, preemption included',
    '  --json             the plan and the notes as JSON',
  ].join('\n'),
  async run(args, io) {
    const values = parseFlags(args, {
      fleet: { type: 'string' },
      kubeconfig: { type: 'string' },
      policy: { type: 'string' },
      json: { type: 'boolean' },
    });
    if (!values.fleet === !values.kubeconfig)
      throw new UsageError('give exactly one of --fleet FILE or --kubeconfig FILE');
    let preemption;
    if (values.policy) {
      const text = await readInputText(values.policy, '--policy', io);
      try {
        preemption = parseMigPolicy(text, values.policy).preemption;
      } catch (err) {
        if (err instanceof MigPolicyError) throw new InputError(`--policy: ${err.message}`, { cause: err });
        throw err;
      }
    }
    const { readMigFleet } = await import('./supply.ts');
    let fleet;
    if (values.fleet) {
      await readInputText(values.fleet, '--fleet', io);
      const read = await readFleet(values.fleet);
      fleet = readMigFleet(read.nodes, read.pods, read.usage, undefined, read.layouts);
    } else {
      await readInputText(values.kubeconfig!, '--kubeconfig', io);
      const { kubePorts, loadKubeConfig } = await import('../adapters/kube/client.ts');
      // Reads only: nodes and pods (every namespace), page by page.
      const ports = kubePorts(loadKubeConfig({ kubeconfigPath: values.kubeconfig! }), { namespace: 'gpu-reflex' });
      // A live cluster's inventories are judged fresh against now (a fleet file's, written once, are not).
      const { currentClock } = await import('../adapters/clock.ts');
      const now = new Date(currentClock().now());
      fleet = readMigFleet(await ports.nodes.list(), await ports.pods.list(), undefined, undefined, undefined, now);
    }
    const plan = planMig(fleet.nodes, fleet.pending, preemption ? { preemption } : {});
    if (values.json) io.out(JSON.stringify({ ...plan, notes: fleet.notes }, null, 2));
    else for (const l of planTable(plan, fleet.notes)) io.out(l);
    return 0;
  },
});
