/**
 * `gpu-reflex quota plan` (the quotas the rewriter would write, from a fleet file or a live
 * cluster; changes nothing) and `gpu-reflex quota rollback` (a live cluster's gpu-reflex quotas back
 * to the values before their last rewrite, held from rewrites for a while).
 */
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { InputError, UsageError, type CliIo, type Command } from '../../events/cli-kit/command.ts';
import { parseFlags } from '../../events/cli-kit/flags.ts';
import { readInputText } from '../../events/cli-kit/input.ts';
import { RecordingPublisher, type EventPublisher } from '../adapters/bus.ts';
import { EventBridgePublisher } from '../adapters/bus-eventbridge.ts';
import { RecordingNotifier } from '../adapters/chat/notifier.ts';
import { systemClock } from '../adapters/clock.ts';
import type { NodeInfo, PodInfo, QuotaInfo } from '../adapters/kube/model.ts';
import { createLogger } from '../adapters/logger.ts';
import { parseQuotaConfig, QuotaConfigError, resourcesOf, type QuotaConfig } from './core/config.ts';
import { quotaKey, type QuotaPlan } from './core/planner.ts';
import { planQuotasAsRead, quotaFacts } from './facts.ts';
import { rollbackQuotas } from './run.ts';

async function readConfig(path: string | undefined, io: CliIo): Promise<QuotaConfig> {
  if (!path)
    throw new UsageError('--config FILE is required: the teams, their weights, guarantees and maxima (docs/quota.md)');
  try {
    return parseQuotaConfig(await readInputText(path, '--config', io), path);
  } catch (err) {
    throw err instanceof QuotaConfigError ? new InputError(err.message, { cause: err }) : err;
  }
}

export function planTable(
  config: QuotaConfig,
  plan: QuotaPlan,
  usage: Record<string, Record<string, number>>,
  excluded: string[],
): string[] {
  const rows: string[][] = [['TEAM', 'NAMESPACE', 'RESOURCE', 'USED', 'NOW', 'NEW', '']];
  for (const n of plan.namespaces) {
    for (const r of resourcesOf(config)) {
      const k = quotaKey(r);
      const change = n.changes.find((c) => c.key === k);
      const now = change ? (change.from === null ? '-' : String(change.from)) : String(n.hard[k]);
      rows.push([
        n.team,
        n.namespace,
        r,
        String(usage[n.namespace]?.[r] ?? 0),
        now,
        String(n.hard[k]),
        change ? (change.from === null ? 'new' : Number(change.from) < change.to ? 'up' : 'down') : '',
      ]);
    }
  }
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  const out = rows.map((r) =>
    r
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd(),
  );
  for (const [r, p] of Object.entries(plan.pool)) {
    // A MIG group is planned in eighths of a GPU; people read GPUs.
    const u = p.unit ? (n: number) => `${n / 8}` : String;
    out.push(
      `${r}: capacity ${u(p.capacity)}${p.unit ? ' GPU-equivalents' : ''}, ${u(p.shared)} shared out ` +
        `(overcommit ${config.overcommit}, buffer ${config.buffer[r] ?? 0})`,
    );
  }
  if (excluded.length > 0) out.push(`not counted: ${excluded.join(', ')}`);
  for (const w of plan.warnings) out.push(`warning: ${w}`);
  return out;
}

/**
 * A fleet file as a cluster would hold it (`--fleet`): its nodes, pods and quotas in the adapters'
 * types, a bad file an InputError. The fleet file is the simulated cluster's format, so the reader
 * is the local stack's (infra/local/fleet-snapshot.ts), handed in where the CLI wires its commands
 * (bin/main.ts): nothing in functions/ imports the simulators (test/contract/layers.test.ts).
 */
export type QuotaFleetReader = (path: string) => Promise<{ nodes: NodeInfo[]; pods: PodInfo[]; quotas: QuotaInfo[] }>;

export const createQuotaPlanCommand = (readFleet: QuotaFleetReader): Command => ({
  path: ['quota', 'plan'],
  summary: 'print the team quotas the rewriter would write (fleet file or live cluster; changes nothing)',
  help: [
    'Usage: gpu-reflex quota plan --config FILE (--fleet FILE | --kubeconfig FILE) [--json]',
    '',
    'Reads capacity (Ready, schedulable nodes not taken out by remediation), what each team',
    "namespace uses (its pods, as ResourceQuota counts them) and gpu-reflex's current quotas, and",
    'prints per namespace and resource: used, the quota now, the quota the rewriter would write.',
    'Nothing is changed.',
    '  --config FILE      teams: namespaces, weight, guarantee, max; buffer, overcommit (docs/quota.md)',
    '  --fleet FILE       a fleet file (infra/local/kube/fleet.ts format), as the simulated cluster',
    '                     would hold it',
    '  --kubeconfig FILE  a live cluster (reads nodes, pods and resourcequotas)',
    '  --json             the plan as JSON (pool, teams, namespaces with changes and reasons, warnings)',
    '',
    'Example:',
    '  gpu-reflex quota plan --config infra/local/scenarios/fleets/mixed-quota-teams.yaml --fleet ' +
      'infra/local/scenarios/fleets/mixed.yaml',
  ].join('\n'),
  async run(args: string[], io: CliIo): Promise<number> {
    const values = parseFlags(args, {
      config: { type: 'string' },
      fleet: { type: 'string' },
      kubeconfig: { type: 'string' },
      json: { type: 'boolean' },
    });
    if (!values.fleet === !values.kubeconfig)
      throw new UsageError('give exactly one of --fleet FILE or --kubeconfig FILE');
    const config = await readConfig(values.config, io);
    let read;
    if (values.fleet) {
      await readInputText(values.fleet, '--fleet', io);
      read = await readFleet(values.fleet);
    } else {
      await readInputText(values.kubeconfig!, '--kubeconfig', io);
      const { kubePorts, loadKubeConfig } = await import('../adapters/kube/client.ts');
      const ports = kubePorts(loadKubeConfig({ kubeconfigPath: values.kubeconfig! }), { namespace: 'gpu-reflex' });
      const [nodes, pods, quotas] = await Promise.all([
        ports.nodes.list(),
        ports.pods.list(),
        ports.quotas.listQuotas(),
      ]);
      read = { nodes, pods, quotas };
    }
    const facts = quotaFacts(config, read.nodes, read.pods, read.quotas);
    const plan = planQuotasAsRead(config, facts);
    if (values.json) io.out(JSON.stringify({ ...plan, excluded: facts.excluded }, null, 2));
    else for (const l of planTable(config, plan, facts.usage, facts.excluded)) io.out(l);
    return 0;
  },
});

export const quotaRollbackCommand: Command = {
  path: ['quota', 'rollback'],
  summary: "put gpu-reflex's team quotas back to the values before their last rewrite, and hold them",
  help: [
    'Usage: gpu-reflex quota rollback --kubeconfig FILE --config FILE [--namespace NS]... [--hold-minutes N] ' +
      '[--force] [--dry-run] [--endpoint URL]',
    '',
    'Each gpu-reflex ResourceQuota (of the namespaces named, or all) goes back to the values its last',
    'rewrite replaced (kept in its gpu-reflex.io/previous-hard annotation) and is held from rewrites',
    'for --hold-minutes (default 60; annotation gpu-reflex.io/quota-hold-until). A rollback can itself',
    'be rolled back. A quota gpu-reflex created is deleted (absence restored, not held: rewrite-quotas',
    "writes it again at its next round). Going back below what a namespace uses (the quota's",
    'status.used), or cutting a value whose usage status.used does not give yet, is refused, and',
    'nothing changes there, unless --force. Publishes Quota Rewritten for',
    'each when a bus is given (--endpoint or AWS_ENDPOINT_URL_EVENTBRIDGE / AWS credentials).',
    '  --force     roll back even below what a namespace uses (its running pods stay; new ones are refused)',
    '  --dry-run   print what would change; write nothing',
    'Exit status 1 when a namespace was refused or had nothing to go back to.',
  ].join('\n'),
  async run(args: string[], io: CliIo, env: NodeJS.ProcessEnv = process.env): Promise<number> {
    const values = parseFlags(args, {
      kubeconfig: { type: 'string' },
      config: { type: 'string' },
      namespace: { type: 'string', multiple: true },
      'hold-minutes': { type: 'string' },
      'dry-run': { type: 'boolean' },
      force: { type: 'boolean' },
      endpoint: { type: 'string' },
    });
    if (!values.kubeconfig) throw new UsageError('--kubeconfig FILE is required: rollback changes a live cluster');
    const holdText = values['hold-minutes'];
    // Number('') is 0: an empty `--hold-minutes=` is refused, not read as "no hold at all".
    const hold = holdText === undefined ? 60 : holdText.trim() === '' ? NaN : Number(holdText);
    if (!Number.isInteger(hold) || hold < 0 || hold > 10_080)
      throw new UsageError(`--hold-minutes must be an integer from 0 to 10080 (got "${holdText}")`);
    const config = await readConfig(values.config, io);
    await readInputText(values.kubeconfig, '--kubeconfig', io);
    const { kubePorts, loadKubeConfig } = await import('../adapters/kube/client.ts');
    const { dryRunPorts } = await import('../adapters/kube/dry-run.ts');
    const real = kubePorts(loadKubeConfig({ kubeconfigPath: values.kubeconfig }), { namespace: 'gpu-reflex' });
    const dry = values['dry-run'] === true;
    const ports = dry ? dryRunPorts(real, () => {}) : real;
    const endpoint = values.endpoint ?? env.AWS_ENDPOINT_URL_EVENTBRIDGE;
    const client = endpoint
      ? new EventBridgeClient({
          region: env.AWS_REGION ?? 'us-east-1',
          endpoint,
          ...(!env.AWS_ACCESS_KEY_ID ? { credentials: { accessKeyId: 'local', secretAccessKey: 'local' } } : {}),
        })
      : undefined;
    const publisher: EventPublisher =
      client && !dry ? new EventBridgePublisher(env.EVENT_BUS_NAME ?? 'gpu-reflex', client) : new RecordingPublisher();
    try {
      const r = await rollbackQuotas(
        {
          quotas: ports.quotas,
          state: ports.state,
          publisher,
          notifier: new RecordingNotifier(),
          clock: systemClock,
          logger: createLogger({ service: 'quota-rollback', level: 'error' }),
          config,
        },
        values.namespace,
        hold,
        { force: values.force === true },
      );
      for (const x of r.restored) {
        const keys = [...new Set([...Object.keys(x.from), ...Object.keys(x.to)])].sort();
        const values = keys.map((k) => `${k} ${x.from[k] ?? 'unset'} → ${x.to[k] ?? 'unset'}`).join(', ');
        io.out(
          `${dry ? 'would roll back' : 'rolled back'} ${x.namespace}: ` +
            (x.deleted
              ? `${dry ? 'would delete' : 'deleted'} the quota gpu-reflex had created (${values || 'no values'}); ` +
                'rewrite-quotas writes it again at its next round'
              : `${values || 'no values'}${hold > 0 ? `; held from rewrites for ${hold} min` : ''}`),
        );
        for (const w of x.warnings) io.out(`warning: ${x.namespace}: ${w}`);
      }
      for (const s of r.refused) io.out(`refused ${s.namespace}: ${s.why}`);
      for (const s of r.skipped) io.out(`skipped ${s.namespace}: ${s.why}`);
      if (!client && !dry && r.restored.length > 0) io.out('no bus given (--endpoint): Quota Rewritten not published');
      return r.refused.length > 0 || (r.restored.length === 0 && r.skipped.length > 0) ? 1 : 0;
    } finally {
      client?.destroy();
    }
  },
};
