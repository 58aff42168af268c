import { dirname, resolve } from 'node:path';
import { parseFlags } from '../../events/cli-kit/flags.ts';
import { InputError, processIo, UsageError, type CliIo, type Command } from '../../events/cli-kit/command.ts';
import { checkWritableFile, readInputText } from '../../events/cli-kit/input.ts';
import { identifyCluster } from './cluster-identity.ts';
import { DEFAULT_SCENARIO_PATH, parseScenario, ScenarioError, type Scenario } from './scenario.ts';
import { startStack, type StackResult } from './stack.ts';
import { STACK_TARGETS, type StackTarget } from './stack-alibaba.ts';

/**
 * `gpu-reflex local` (npm start): the whole pipeline on this machine in real time.
 * `gpu-reflex simulate`: the same scenario on a virtual clock, in seconds.
 * Both print a live timeline and a summary; `--report FILE` writes the JSON report (`.html`: a page).
 */
const TARGET_HELP = `  --target T         the cloud the functions run on, as deployed: aws (default; Lambda and
                     EventBridge, from serverless.yml) or alibaba (Function Compute 3.0 and
                     Alibaba EventBridge, from the ROS template of npm run package -- --target
                     alibaba: CloudEvents to its signed PutEvents, rules in Alibaba's pattern
                     syntax, FC's event, timer and HTTP triggers). Same scenario, same expectations`;

/** `--target`: one of STACK_TARGETS, else a usage error naming it. */
function targetOf(value: string | undefined): StackTarget {
  if (value === undefined) return 'aws';
  if ((STACK_TARGETS as readonly string[]).includes(value)) return value as StackTarget;
  throw new UsageError(`--target ${value}: unknown target (expected one of ${STACK_TARGETS.join(', ')})`);
}

const LOCAL_HELP =
  `Usage: gpu-reflex local [--scenario FILE] [--follow] [--kubeconfig FILE [--write-to-real-cluster]] ` +
  `[--report FILE] [--duration S] [--target aws|alibaba]

Runs gpu-reflex end to end on this machine, in real time: a simulated Kubernetes cluster, the
local event bus with the functions of serverless.yml, and one node agent per GPU node reading its
own mock NVML GPUs. The scenario's faults are injected at the NVML layer; the timeline shows what
the agents, the bus, the functions and the cluster did.

Options:
  --scenario FILE    scenario (YAML or JSON); default: infra/local/scenarios/default.yaml
  --follow           keep running after the scenario's end, until Ctrl-C
  --kubeconfig FILE  act on this cluster instead of the simulated one: only a simulated cluster
                     (gpu-reflex cluster serve) is accepted as it is, anything else is refused
  --write-to-real-cluster
                     act on a --kubeconfig cluster that is not the simulated one: the mock GPUs'
                     faults cordon, drain and taint its nodes of the scenario's names, and the
                     scenario's pods are created in it (the node labeler still labels nothing)
  --report FILE      write the JSON report (events, deliveries, actions, final nodes and pods);
                     a FILE ending in .html gets a page instead: one lane per node (its state
                     over time, faults, fences, drains, approvals; the why on hover)
  --duration S       run S seconds instead of the scenario's durationSeconds
${TARGET_HELP}

Example:
  npm start
  npm start -- --target alibaba
  gpu-reflex local --scenario infra/local/scenarios/storm.yaml --report /tmp/storm.json

To look at your own cluster without changing it, use the read-only commands (README, "Looking at
your own cluster safely"): gpu-reflex remediate plan EVENT --kubeconfig FILE.`;

const SIMULATE_HELP = `Usage: gpu-reflex simulate [--scenario FILE] [--report FILE] [--target aws|alibaba]

Runs a scenario through the same stack as \`gpu-reflex local\` on a virtual clock: a minute of
scenario takes seconds, and the same inputs give the same timeline. Exit code 1 when one of the
scenario's \`expect\` checks fails.

Options:
  --scenario FILE  scenario (YAML or JSON); default: infra/local/scenarios/default.yaml
  --report FILE    write the JSON report; a FILE ending in .html gets a page instead: one lane
                   per node (state over time, faults, fences, drains, approvals; the why on hover)
${TARGET_HELP}

Example:
  gpu-reflex simulate --report /tmp/default.json
  gpu-reflex simulate --target alibaba
  gpu-reflex simulate --report /tmp/default.html`;

export interface LocalCliHooks {
  /** Resolves to end a running stack (tests); default: SIGINT/SIGTERM. */
  stop?: Promise<void>;
  onResult?: (r: StackResult) => void;
}

/** The scenario, and every path the run will read or write, checked before anything starts. */
async function load(
  o: { scenario?: string | undefined; report?: string | undefined; kubeconfig?: string | undefined },
  io: CliIo,
): Promise<Scenario> {
  const path = o.scenario ?? DEFAULT_SCENARIO_PATH;
  const text = await readInputText(path, '--scenario', io);
  let scenario: Scenario;
  try {
    scenario = parseScenario(text, path, dirname(resolve(path)));
  } catch (err) {
    throw err instanceof ScenarioError ? new InputError(err.message, { cause: err }) : err;
  }
  if (o.report) await checkWritableFile(o.report, '--report');
  if (o.kubeconfig) await readInputText(o.kubeconfig, '--kubeconfig', io);
  return scenario;
}

async function runScenario(
  scenario: Scenario,
  io: CliIo,
  hooks: LocalCliHooks,
  opts: {
    clock: 'wall' | 'virtual';
    report?: string | undefined;
    kubeconfig?: string | undefined;
    kubeconfigIsSimulated?: boolean;
    durationMs?: number;
    target: StackTarget;
  },
): Promise<number> {
  // Node 20 is supported by this project; the SDK's notice about its 2027 releases is noise here.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const colour = io === processIo && process.stdout.isTTY && !process.env.NO_COLOR;
  let stack;
  try {
    stack = await startStack(scenario, {
      clock: opts.clock,
      out: io.out,
      colour,
      ...(opts.report ? { reportPath: opts.report } : {}),
      ...(opts.kubeconfig ? { kubeconfig: opts.kubeconfig } : {}),
      ...(opts.kubeconfigIsSimulated ? { kubeconfigIsSimulated: true } : {}),
      ...(opts.durationMs !== undefined ? { durationMs: opts.durationMs } : {}),
      target: opts.target,
    });
  } catch (err) {
    // Start-up failures (no C compiler, a bad kubeconfig, an agent that would not start) are
    // reported in one message; what had started is already stopped.
    io.err(
      `gpu-reflex ${opts.clock === 'wall' ? 'local' : 'simulate'}: could not start the ` +
        `stack: ${(err as Error).message}`,
    );
    return 1;
  }
  const onSignal = () => stack.stop();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  void hooks.stop?.then(() => stack.stop());
  try {
    const result = await stack.run();
    hooks.onResult?.(result);
    return result.exitCode;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

/**
 * Refuses a `--kubeconfig` cluster that is not the simulated one (by identity: cluster-identity.ts)
 * unless `--write-to-real-cluster` says writing to it is meant; returns whether it is simulated.
 * Nothing has touched the cluster yet: the refusal leaves it exactly as it was.
 */
async function checkClusterToWrite(kubeconfig: string, writeToReal: boolean): Promise<boolean> {
  let id;
  try {
    id = await identifyCluster(kubeconfig);
  } catch (err) {
    // A file that is there but is no kubeconfig: the user's input, said in one line (exit 1).
    throw new InputError(`--kubeconfig ${kubeconfig}: ${err instanceof Error ? err.message : String(err)}`, {
      cause: err,
    });
  }
  if (id.simulated || writeToReal) return id.simulated;
  throw new UsageError(
    `--kubeconfig ${kubeconfig}: refusing to act on ${id.server || 'its cluster'}: it is not gpu-reflex's ` +
      `simulated cluster (${id.why}). \`local\` makes faults on mock GPUs, and the functions would cordon, ` +
      `drain and taint that cluster's nodes and create the scenario's pods in it. To see what gpu-reflex would ` +
      `do there without writing: gpu-reflex remediate plan EVENT --kubeconfig ${kubeconfig}. To act on it ` +
      `anyway: add --write-to-real-cluster`,
  );
}

export function makeLocalCommand(hooks: LocalCliHooks = {}): Command {
  return {
    path: ['local'],
    summary: 'run the whole pipeline on this machine (simulated cluster, bus, functions, agents on mock GPUs)',
    help: LOCAL_HELP,
    async run(args, io) {
      const v = parseFlags(args, {
        scenario: { type: 'string' },
        follow: { type: 'boolean' },
        kubeconfig: { type: 'string' },
        'write-to-real-cluster': { type: 'boolean' },
        report: { type: 'string' },
        duration: { type: 'string' },
        target: { type: 'string' },
      });
      const target = targetOf(v.target);
      if (v['write-to-real-cluster'] && !v.kubeconfig)
        throw new UsageError(
          '--write-to-real-cluster goes with --kubeconfig FILE (without it the cluster is simulated)',
        );
      let durationMs: number | undefined;
      if (v.duration !== undefined) {
        const s = Number(v.duration);
        if (!(s > 0)) throw new UsageError(`--duration must be a positive number of seconds (got "${v.duration}")`);
        durationMs = s * 1000;
      }
      if (v.follow) durationMs = Infinity;
      const scenario = await load(v, io);
      const simulated = v.kubeconfig
        ? await checkClusterToWrite(v.kubeconfig, v['write-to-real-cluster'] === true)
        : false;
      return runScenario(scenario, io, hooks, {
        clock: 'wall',
        report: v.report,
        kubeconfig: v.kubeconfig,
        kubeconfigIsSimulated: simulated,
        target,
        ...(durationMs !== undefined ? { durationMs } : {}),
      });
    },
  };
}

export function makeSimulateCommand(hooks: LocalCliHooks = {}): Command {
  return {
    path: ['simulate'],
    summary: 'run a scenario through the local stack on a virtual clock (seconds, reproducible)',
    help: SIMULATE_HELP,
    async run(args, io) {
      const v = parseFlags(args, {
        scenario: { type: 'string' },
        report: { type: 'string' },
        target: { type: 'string' },
      });
      const target = targetOf(v.target);
      const scenario = await load(v, io);
      return runScenario(scenario, io, hooks, { clock: 'virtual', report: v.report, target });
    },
  };
}

export const localCommand = makeLocalCommand();
export const simulateCommand = makeSimulateCommand();
