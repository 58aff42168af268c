/**
 * `gpu-reflex remediate policy` (check a policy file, print the rules it yields) and
 * `gpu-reflex remediate plan` (what remediation would do with one event: a dry run of the pure
 * core with no cluster, or, with --kubeconfig, the handler's own run against a live cluster
 * behind the dry-run decorator: reads are real, writes are only recorded).
 */
import * as z from 'zod';
import { InputError, UsageError, type CliIo, type Command } from '../../events/cli-kit/command.ts';
import { parseFlagsAndArgs } from '../../events/cli-kit/flags.ts';
import { issuesLine } from '../../events/cli-kit/phrases.ts';
import { readInputText, readJsonObject } from '../../events/cli-kit/input.ts';
import {
  GpuHealthChangedDetailSchema,
  GpuXidErrorDetailSchema,
  HEALTH_CONDITIONS,
  XID_CATALOG,
} from '../../events/index.ts';
import { planRemediation } from './core/plan.ts';
import { DEFAULT_POLICY, poolOf, resolveRule, type Policy } from './core/policy.ts';
import { loadPolicy, PolicyFileError } from './core/policy-file.ts';
import { stateOf } from './core/state.ts';
import type { TriggerEvent } from './core/types.ts';

/** The policy in `path` over the defaults; `what` names the file in errors (`policy file`, `--policy`). */
async function policyFrom(path: string | undefined, what: string, io: CliIo): Promise<Policy> {
  return path ? loadPolicy(await readInputText(path, what, io), path) : DEFAULT_POLICY;
}

/** The trigger event in `file`: a GPU XID Error or GPU Health Changed, its detail checked. */
async function eventFrom(file: string, io: CliIo): Promise<TriggerEvent> {
  const raw = await readJsonObject(file, 'event file', io);
  const type = raw['detail-type'];
  const check = <T>(r: z.ZodSafeParseResult<T>): T => {
    if (!r.success) throw new InputError(`event file ${file}: ${issuesLine(r.error.issues, ['detail'])}`);
    return r.data;
  };
  if (type === 'GPU XID Error')
    return { detailType: type, detail: check(GpuXidErrorDetailSchema.safeParse(raw.detail)) };
  if (type === 'GPU Health Changed')
    return { detailType: type, detail: check(GpuHealthChangedDetailSchema.safeParse(raw.detail)) };
  throw new InputError(
    `event file ${file}: expected a GPU XID Error or GPU Health Changed event, got detail-type ` +
      `${JSON.stringify(type) ?? 'none'}`,
  );
}

export const policyCommand: Command = {
  path: ['remediate', 'policy'],
  summary: 'check a remediation policy file and print the rules it yields',
  help: [
    'Usage: gpu-reflex remediate policy [FILE] [--pool NAME] [--gpu-model NAME] [--json]',
    '',
    'Loads FILE (YAML or JSON) over the defaults and prints, per XID and health condition, the',
    'first action, the escalation chain and the repetition rule. Without FILE: the defaults.',
    'Errors name the line and field (policy.yaml:12: xids.79.action: ...); exit code 1.',
    "  --pool NAME        apply that pool's overrides (and its profiles)",
    "  --gpu-model NAME   the GPU's product name, for profiles that match gpuModels ('NVIDIA H100 80GB HBM3')",
    '  --json             print the merged policy as JSON',
  ].join('\n'),
  async run(args, io) {
    const { values, positionals } = parseFlagsAndArgs(args, {
      pool: { type: 'string' },
      'gpu-model': { type: 'string' },
      json: { type: 'boolean' },
    });
    if (positionals.length > 1) throw new UsageError('expected at most one policy FILE');
    let policy: Policy;
    try {
      policy = await policyFrom(positionals[0], 'policy file', io);
    } catch (err) {
      if (!(err instanceof PolicyFileError)) throw err;
      for (const p of err.problems) io.err(p);
      return 1;
    }
    if (values.json) {
      io.out(JSON.stringify(policy, null, 2));
      return 0;
    }
    // A pool the policy names nowhere gets the rules every pool gets: said, since it is often a typo.
    const named = [
      ...new Set([...Object.keys(policy.pools), ...Object.values(policy.profiles).flatMap((p) => p.match.pools ?? [])]),
    ].sort();
    if (values.pool !== undefined && !named.includes(values.pool))
      io.err(
        `note: no override or profile of this policy names pool "${values.pool.slice(0, 64)}"` +
          ` (${named.length > 0 ? `it names ${named.join(', ')}` : 'it names no pool'}): the rules below are the ones` +
          ` every pool gets`,
      );
    const rows: string[][] = [['trigger', 'action', 'then', 'escalate on repeat']];
    const triggers: (number | (typeof HEALTH_CONDITIONS)[number])[] = [...XID_CATALOG.keys(), ...HEALTH_CONDITIONS];
    for (const t of triggers) {
      const model = values['gpu-model'];
      const r = resolveRule(
        policy,
        values.pool,
        typeof t === 'number' && model ? { kind: 'xid', xid: t, gpuModel: model } : t,
      );
      const esc = r.escalate
        ? `${r.escalate.count}x / ${r.escalate.windowMinutes} min / ${r.escalate.distinctWorkloads} workloads`
        : '-';
      rows.push([
        typeof t === 'number' ? `XID ${t}` : t,
        r.action + (r.notify ? ' + notify' : '') + (r.profile ? ` (profile ${r.profile})` : ''),
        r.then.join(' → ') || '-',
        esc,
      ]);
    }
    const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
    for (const r of rows)
      io.out(
        r
          .map((c, i) => c.padEnd(widths[i]!))
          .join('  ')
          .trimEnd(),
      );
    return 0;
  },
};

/** The optional facts file: the node, its pods and its pool as the handler would fetch them. */
const FactsFileSchema = z
  .object({
    node: z
      .object({
        name: z.string(),
        labels: z.record(z.string(), z.string()).default({}),
        annotations: z.record(z.string(), z.string()).default({}),
        // The effects Kubernetes allows (core/v1 Taint, "Valid effects are NoSchedule, PreferNoSchedule and
        // NoExecute": https://kubernetes.io/docs/reference/kubernetes-api/cluster-resources/node-v1/#NodeSpec),
        // the one Taint type's (adapters/kube/model.ts): another is a clear error, not a taint read as none.
        taints: z
          .array(
            z.object({
              key: z.string(),
              value: z.string().optional(),
              effect: z.enum(['NoSchedule', 'PreferNoSchedule', 'NoExecute']),
            }),
          )
          .default([]),
        unschedulable: z.boolean().default(false),
        gpus: z.array(z.string()).optional(),
      })
      .optional(),
    pods: z
      .array(
        z.object({
          namespace: z.string(),
          name: z.string(),
          uid: z.string(),
          gpus: z.array(z.string()).optional(),
          migInstances: z.array(z.string()).optional(),
          requestsGpu: z.boolean(),
          daemonSet: z.boolean().default(false),
          mirror: z.boolean().default(false),
        }),
      )
      .default([]),
    pool: z
      .object({
        nodes: z.number().int().min(1),
        quarantinedInWindow: z.number().int().min(0).default(0),
        quarantinedNodes: z.array(z.string()).default([]),
      })
      .optional(),
  })
  .strict();

export const planCommand: Command = {
  path: ['remediate', 'plan'],
  summary: 'print the remediation plan for one event, in dry run (from facts, or reading a live cluster)',
  help: [
    'Usage: gpu-reflex remediate plan EVENT_FILE [--policy FILE] [--facts FILE | --kubeconfig FILE] [--now ISO]',
    '',
    'EVENT_FILE holds a `GPU XID Error` or `GPU Health Changed` event as EventBridge delivers it.',
    'FACTS is JSON: { node?: {name, labels, annotations, taints, unschedulable, gpus},',
    '  pods?: [{namespace, name, uid, requestsGpu, daemonSet, mirror, gpus}], pool?: {nodes, quarantinedInWindow} }.',
    'Without it: an empty node named in the event, no pods, a 10-node pool. Prints the plan as JSON.',
    '',
    '--kubeconfig FILE runs what the remediate function would run against that cluster (its node,',
    'pods, pool and blast-radius ledger), in dry run: nothing in the cluster changes. Prints the plan,',
    'every write it would make, and the Remediation event it would publish.',
  ].join('\n'),
  async run(args, io) {
    const { values, positionals } = parseFlagsAndArgs(args, {
      policy: { type: 'string' },
      facts: { type: 'string' },
      kubeconfig: { type: 'string' },
      now: { type: 'string' },
    });
    if (positionals.length !== 1) throw new UsageError('expected one EVENT_FILE');
    if (values.facts && values.kubeconfig) throw new UsageError('give --facts or --kubeconfig, not both');
    const now = values.now === undefined ? undefined : new Date(values.now);
    if (now && Number.isNaN(now.getTime())) throw new UsageError(`--now: expected an ISO time (got "${values.now}")`);
    let policy: Policy;
    try {
      policy = await policyFrom(values.policy, '--policy', io);
    } catch (err) {
      // The policy command lists a file's problems one per line; here they fold into one.
      if (err instanceof PolicyFileError) throw new InputError(err.problems.join('; '), { cause: err });
      throw err;
    }
    const event = await eventFrom(positionals[0]!, io);
    if (values.kubeconfig) {
      // Read once here so a missing or unreadable file is named plainly, before any connection.
      await readInputText(values.kubeconfig, '--kubeconfig', io);
      return planAgainstCluster(event, policy, values.kubeconfig, io);
    }
    const parsedFacts = FactsFileSchema.safeParse(
      values.facts ? await readJsonObject(values.facts, '--facts', io) : {},
    );
    if (!parsedFacts.success) throw new InputError(`--facts ${values.facts}: ${issuesLine(parsedFacts.error.issues)}`);
    const facts = parsedFacts.data;
    const node = facts.node ?? {
      name: event.detail.node,
      labels: {},
      annotations: {},
      taints: [],
      unschedulable: false,
    };
    const pool = {
      name: poolOf(policy, node.labels),
      nodes: 10,
      quarantinedInWindow: 0,
      quarantinedNodes: [],
      ...facts.pool,
    };
    const state = stateOf(node, policy.taintKey);
    for (const w of state.warnings) io.err(`warning: ${w}`);
    const plan = planRemediation(
      { now: now ?? new Date(Date.parse(event.detail.observedAt) + 1000), event, node, state, pool, pods: facts.pods },
      policy,
    );
    io.out(JSON.stringify(plan, null, 2));
    return 0;
  },
};

/** The handler's run (run.ts) against a live cluster, every write recorded instead of made. */
async function planAgainstCluster(
  event: TriggerEvent,
  policy: Policy,
  kubeconfigPath: string,
  io: CliIo,
): Promise<number> {
  const { kubePorts, loadKubeConfig } = await import('../adapters/kube/client.ts');
  const { dryRunPorts } = await import('../adapters/kube/dry-run.ts');
  const { RecordingPublisher } = await import('../adapters/bus.ts');
  const { DryRunNotifier, DryRunPublisher } = await import('../lib/dry-run.ts');
  const { systemClock } = await import('../adapters/clock.ts');
  const { silentLogger } = await import('../adapters/logger.ts');
  const { remediate } = await import('./run.ts');
  const writes: { op: string; args: unknown[] }[] = [];
  const ports = dryRunPorts(kubePorts(loadKubeConfig({ kubeconfigPath }), { namespace: 'gpu-reflex' }), (a) =>
    writes.push({ op: a.op, args: a.args }),
  );
  // The dry-run wiring, as DRY_RUN=true gives it to the function; the reports are kept, not sent.
  const reported = new RecordingPublisher();
  const publisher = new DryRunPublisher(reported);
  const notifier = new DryRunNotifier();
  const out = await remediate(event, {
    ...ports,
    publisher,
    notifier,
    policy,
    clock: systemClock,
    logger: silentLogger,
    holder: 'gpu-reflex-cli-plan',
  });
  io.out(
    JSON.stringify(
      {
        plan: out.plan,
        wouldWrite: writes.filter((w) => !w.op.startsWith('leases.')),
        wouldPublish: [...reported.published, ...publisher.withheld],
        wouldNotify: notifier.notices,
      },
      null,
      2,
    ),
  );
  return 0;
}
