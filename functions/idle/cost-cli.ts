/**
 * `gpu-reflex cost report --kubeconfig F [--since 7d] [--policy FILE] [--csv | --json]`: GPU-hours and
 * their cost per team and namespace, the idle share apart (core/cost.ts), read from the cluster — the
 * pods running now, their nodes' instance types and the idle runs idle-gpus keeps on the nodes — priced
 * by the idle policy's `prices` (the file idle-gpus reads, IDLE_POLICY_FILE). Reads only.
 */
import { UsageError, type CliIo, type Command } from '../../events/cli-kit/command.ts';
import { parseFlags } from '../../events/cli-kit/flags.ts';
import { readInputText } from '../../events/cli-kit/input.ts';
import { costCsv, costTable, idleKeptWords } from './core/cost.ts';
import { DEFAULT_IDLE_POLICY, parseIdlePolicy } from './core/policy.ts';
import type { PriceSource } from './live-prices.ts';
import { readCost } from './read-cost.ts';

const HELP = [
  'Usage: gpu-reflex cost report --kubeconfig FILE [--since DURATION] [--policy FILE] [--live-prices]',
  '                               [--csv | --json]',
  '',
  'GPU-hours and what they cost per team and namespace over the period, the idle share apart:',
  'each GPU pod running now counts from its creation (or the start of the period) to now, whole',
  "GPUs and MIG devices as their share of a GPU (3g.40gb = 3/7), at the price of its node's instance",
  'type (node.kubernetes.io/instance-type) in the policy; its idle GPU-hours are the idle runs',
  'idle-gpus keeps on the nodes (annotation gpu-reflex.io/idle-gpus). A pod that ended in the period',
  "(Succeeded/Failed, still in the API) counts up to its containers' end; one without an end time is",
  'named, not guessed. A pod deleted from the API is not counted: its idle runs went out as GPU Idle',
  'Allocation events (docs/cost.md). A GPU pod whose share of a GPU its requests do not say (ACK cGPU',
  "aliyun.com/gpu-mem, a DRA claim) makes its row's GPU-hours and cost unknown: never left out.",
  'The team is the pod label the policy names (teamLabel, default "team"), else the namespace.',
  'Reads only: it writes nothing to the cluster.',
  '  --kubeconfig FILE   the cluster to read (required)',
  '  --since DURATION    the period, ending now: 30m, 12h, 7d (default 7d)',
  '  --policy FILE       the idle policy with the prices (IDLE_POLICY_FILE when unset; without',
  '                      either no price is known and COST says "unpriced")',
  '  --live-prices       price the nodes the policy does not from Alibaba Cloud now: DescribePrice',
  '                      (pay-as-you-go) or, on a spot pool, the newest spot price, per GPU of the',
  '                      node; reads ALIBABA_CLOUD_REGION_ID, ACK_CLUSTER_ID and the AccessKey',
  '                      (ALIBABA_CLOUD_ACCESS_KEY_ID/_SECRET) as autoscale-pools does',
  '  --csv               RFC 4180 CSV, one row per team and namespace',
  '  --json              the report as JSON',
].join('\n');

/** `7d`, `12h`, `30m` → milliseconds. */
export function parseSince(v: string): number {
  const m = /^(\d+)(m|h|d)$/.exec(v);
  const n = m ? Number(m[1]) : NaN;
  if (!m || !(n > 0) || n > 366 * 24 * 60)
    throw new UsageError(`--since takes a duration such as 30m, 12h or 7d, not ${JSON.stringify(v)}`);
  return n * { m: 60_000, h: 3_600_000, d: 86_400_000 }[m[2] as 'm' | 'h' | 'd'];
}

export function createCostReportCommand(now: () => number = () => Date.now()): Command {
  return {
    path: ['cost', 'report'],
    summary: 'GPU-hours and cost per team and namespace, idle share apart (reads the cluster)',
    help: HELP,
    async run(args: string[], io: CliIo): Promise<number> {
      const values = parseFlags(args, {
        kubeconfig: { type: 'string' },
        since: { type: 'string' },
        policy: { type: 'string' },
        csv: { type: 'boolean' },
        json: { type: 'boolean' },
        'live-prices': { type: 'boolean' },
      });
      if (!values.kubeconfig) throw new UsageError('--kubeconfig FILE is required: cost report reads the cluster');
      if (values.csv && values.json) throw new UsageError('--csv and --json: choose one');
      const since = parseSince(values.since ?? '7d');
      const policyFile = values.policy ?? process.env.IDLE_POLICY_FILE;
      const policy = policyFile
        ? parseIdlePolicy(await readInputText(policyFile, '--policy', io), policyFile)
        : DEFAULT_IDLE_POLICY;
      await readInputText(values.kubeconfig, '--kubeconfig', io);
      const { kubePorts, loadKubeConfig } = await import('../adapters/kube/client.ts');
      const ports = kubePorts(loadKubeConfig({ kubeconfigPath: values.kubeconfig }), { namespace: 'gpu-reflex' });
      const live = values['live-prices']
        ? { cloud: await aliCloud(), note: (w: string) => io.err(`cost report: unpriced: ${w}`) }
        : undefined;
      const rep = await readCost(ports, policy, since, now(), live);
      const lines = values.json ? [JSON.stringify(rep, null, 2)] : values.csv ? costCsv(rep) : costTable(rep);
      for (const l of lines) io.out(l);
      // The table says it in its last lines, the JSON in `idleKeptFrom`; a CSV has no room for it.
      if (values.csv && rep.idleKeptFrom) io.err(`cost report: ${idleKeptWords(rep.idleKeptFrom)}`);
      return 0;
    },
  };
}

/** The cloud port as autoscale-pools builds it, loaded only for --live-prices. */
async function aliCloud(): Promise<PriceSource> {
  const { AliCloudPools } = await import('../adapters/alicloud/client.ts');
  const { aliCloudSettingsWithSecret } = await import('../adapters/alicloud/access-key.ts');
  const { systemClock } = await import('../adapters/clock.ts');
  return new AliCloudPools(await aliCloudSettingsWithSecret(process.env), systemClock);
}

export const costReportCommand: Command = createCostReportCommand();
