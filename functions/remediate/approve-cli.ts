/**
 * `gpu-reflex approve ID [--reject]`: puts an `Approval Decided` event on the bus, as a chat
 * approval would; the `remediate-approve` function (serverless.yml) decides it. The CLI changes
 * nothing itself and reads no cluster: it needs events:PutEvents on the bus and the approval key
 * that seals the decision (lib/approval-seal.ts) — ssm:GetParameter on its parameter, which is
 * what makes the person at the terminal someone who may decide.
 */
import { userInfo } from 'node:os';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { InputError, UsageError, type CliIo, type Command } from '../../events/cli-kit/command.ts';
import { parseFlags, parseFlagsAndArgs } from '../../events/cli-kit/flags.ts';
import { issuesLine } from '../../events/cli-kit/phrases.ts';
import { readInputText } from '../../events/cli-kit/input.ts';
import {
  APPROVAL_DECIDED,
  ApprovalDecidedDetailSchema,
  SOURCES,
  type ApprovalDecidedDetail,
} from '../../events/index.ts';
import { EventBridgePublisher } from '../adapters/bus-eventbridge.ts';
import { ConfigurationError } from '../adapters/errors.ts';
import {
  APPROVAL_KEY_ENV,
  APPROVAL_KEY_PARAMETER_ENV,
  approvalKeyFromEnv,
  sealDecision,
} from '../lib/approval-seal.ts';

const HELP = [
  'Usage: gpu-reflex approve ID [--reject] [--by NAME] [--comment TEXT] [--key-parameter NAME] ' +
    '[--endpoint URL] [--bus NAME] [--region R] [--dry-run]',
  '',
  'Approves (or with --reject rejects) the held-back remediation ID (apr-..., from its',
  'Approval Requested event) by putting an Approval Decided event on the bus, sealed with the',
  "deployment's approval key. The remediate-approve function refuses a decision without that",
  'seal; it then re-checks the node, acts once, and closes the approval; a second decision for',
  "the same ID changes nothing. The policy's approvals.approvers, when set, must name cli:NAME",
  '(or NAME). Prints the event id; exit code 1 when the key cannot be read or the bus refuses it.',
  '  --reject          reject instead of approve: the incident is closed and left to a person',
  '  --by NAME         who decides (default: the login name); sent as decidedBy {platform: cli}',
  '  --comment TEXT    a note kept with the decision',
  `  --key-parameter NAME  the approval key's SecureString (/gpu-reflex/STAGE/approval-key),`,
  `                    read with your AWS identity; default ${APPROVAL_KEY_PARAMETER_ENV}, or the`,
  `                    key itself in ${APPROVAL_KEY_ENV} (the embedded stack prints it)`,
  '  --endpoint URL    the bus endpoint (the local bus: http://127.0.0.1:PORT); default',
  '                    AWS_ENDPOINT_URL_EVENTBRIDGE, else AWS EventBridge',
  '  --bus NAME        the event bus (default EVENT_BUS_NAME, else gpu-reflex)',
  '  --region R        AWS region (default AWS_REGION, else us-east-1)',
  '  --dry-run         read the key and seal the decision, print the event it would put on the',
  '                    bus (one JSON line), and send nothing: nothing is decided',
].join('\n');

const LIST_HELP = [
  'Usage: gpu-reflex approvals list --kubeconfig FILE [--namespace NS] [--open] [--json]',
  '',
  'Lists the approvals in the store (ConfigMap gpu-reflex-state-approvals in NS, default',
  'gpu-reflex), oldest first: id, status, node, action, expiry, who decided. Reads only.',
  '  --open        only the open ones (the IDs gpu-reflex approve can still decide)',
  '  --json        one JSON array of the stored records',
].join('\n');

export const approvalsListCommand: Command = {
  path: ['approvals', 'list'],
  summary: 'list the approvals in the store (open, approved-applied, rejected, expired)',
  help: LIST_HELP,
  async run(args: string[], io: CliIo): Promise<number> {
    const values = parseFlags(args, {
      kubeconfig: { type: 'string' },
      namespace: { type: 'string' },
      open: { type: 'boolean' },
      json: { type: 'boolean' },
    });
    if (!values.kubeconfig)
      throw new UsageError('--kubeconfig FILE is required: the store is a ConfigMap in the cluster');
    await readInputText(values.kubeconfig, '--kubeconfig', io);
    const { kubePorts, loadKubeConfig } = await import('../adapters/kube/client.ts');
    const { listApprovals } = await import('../lib/approvals.ts');
    const ports = kubePorts(loadKubeConfig({ kubeconfigPath: values.kubeconfig }), {
      namespace: values.namespace ?? 'gpu-reflex',
    });
    const all = (await listApprovals(ports.state)).filter((a) => !values.open || a.status === 'open');
    if (values.json) io.out(JSON.stringify(all, null, 2));
    else if (all.length === 0) io.out(values.open ? 'no open approvals' : 'no approvals');
    else
      for (const a of all)
        io.out(
          [
            a.id,
            a.status,
            a.node,
            a.action,
            `expires ${a.expiresAt}`,
            ...(a.decidedBy ? [`by ${a.decidedBy}`] : []),
          ].join('  '),
        );
    return 0;
  },
};

/** The event's detail; throws UsageError naming what is wrong. */
export function decisionDetail(
  id: string,
  o: { reject: boolean; by: string; comment?: string; now: Date },
): ApprovalDecidedDetail {
  const decision = o.reject ? 'rejected' : 'approved';
  const r = ApprovalDecidedDetailSchema.safeParse({
    schemaVersion: 1,
    // One event per decision: the same decision sent twice is one event to consumers that dedupe.
    eventId: `${id}:${decision}`,
    occurredAt: o.now.toISOString(),
    approvalId: id,
    decision,
    decidedBy: { platform: 'cli', id: o.by },
    ...(o.comment ? { comment: o.comment } : {}),
  });
  if (!r.success) throw new UsageError(issuesLine(r.error.issues, []));
  return r.data;
}

export const approveCommand: Command = {
  path: ['approve'],
  summary: 'approve or reject a held-back remediation (puts Approval Decided on the bus)',
  help: HELP,
  async run(
    args: string[],
    io: CliIo,
    env: NodeJS.ProcessEnv = process.env,
    now: () => Date = () => new Date(),
  ): Promise<number> {
    const { values, positionals } = parseFlagsAndArgs(args, {
      reject: { type: 'boolean' },
      by: { type: 'string' },
      comment: { type: 'string' },
      'key-parameter': { type: 'string' },
      endpoint: { type: 'string' },
      bus: { type: 'string' },
      region: { type: 'string' },
      'dry-run': { type: 'boolean' },
    });
    if (positionals.length !== 1) throw new UsageError(`expected one approval ID (apr-...), got ${positionals.length}`);
    const by = values.by ?? env.USER ?? userInfo().username;
    const unsealed = decisionDetail(positionals[0]!, {
      reject: values.reject ?? false,
      by,
      ...(values.comment ? { comment: values.comment } : {}),
      now: now(),
    });
    const region = values.region ?? env.AWS_REGION ?? 'us-east-1';
    const keyEnv = values['key-parameter'] ? { [APPROVAL_KEY_PARAMETER_ENV]: values['key-parameter'] } : env;
    const key = await approvalKeyFromEnv(keyEnv, async (parameter, label) => {
      const [{ SSMClient }, { readSecureString }] = await Promise.all([
        import('@aws-sdk/client-ssm'),
        import('../adapters/ssm.ts'),
      ]);
      const ssm = new SSMClient({ region });
      try {
        return await readSecureString(parameter, label, ssm);
      } finally {
        ssm.destroy();
      }
    });
    if (!key)
      throw new ConfigurationError(
        `no approval key: remediate-approve refuses an unsealed decision; pass --key-parameter ` +
          `/gpu-reflex/STAGE/approval-key (ssm:GetParameter on it) or set ` +
          `${APPROVAL_KEY_PARAMETER_ENV} or ${APPROVAL_KEY_ENV}`,
        { what: APPROVAL_KEY_PARAMETER_ENV },
      );
    const detail = sealDecision(key, unsealed);
    const endpoint = values.endpoint ?? env.AWS_ENDPOINT_URL_EVENTBRIDGE;
    if (endpoint !== undefined && !/^https?:\/\/[^/\s]+/.test(endpoint))
      throw new UsageError(
        `${values.endpoint !== undefined ? '--endpoint' : 'AWS_ENDPOINT_URL_EVENTBRIDGE'} ` +
          `"${endpoint.slice(0, 64)}" is ` +
          `not a URL (http://127.0.0.1:PORT for the local bus)`,
      );
    const busName = values.bus ?? env.EVENT_BUS_NAME ?? 'gpu-reflex';
    if (values['dry-run']) {
      io.out(
        `dry run: ${detail.decision} ${detail.approvalId} by cli:${by} would be event ${detail.eventId} on bus ` +
          `${busName} (${endpoint ?? `AWS EventBridge, ${region}`}); nothing sent, nothing decided`,
      );
      io.out(JSON.stringify({ source: SOURCES.chatops, detailType: APPROVAL_DECIDED, detail }));
      return 0;
    }
    const client = new EventBridgeClient({
      region,
      ...(endpoint ? { endpoint } : {}),
      // The local bus checks no signature: spare a laptop the AWS credentials it does not have.
      ...(endpoint && !env.AWS_ACCESS_KEY_ID
        ? { credentials: { accessKeyId: 'local', secretAccessKey: 'local' } }
        : {}),
    });
    try {
      await new EventBridgePublisher(busName, client).publish([
        { source: SOURCES.chatops, detailType: APPROVAL_DECIDED, detail },
      ]);
    } catch (err) {
      // The SDK's own words for missing credentials stay in the cause, which the CLI does not print.
      if (causes(err).some((e) => e.name === 'CredentialsProviderError'))
        throw new InputError(
          'no AWS credentials to put the decision on the bus: set AWS_PROFILE or AWS_ACCESS_KEY_ID and ' +
            'AWS_SECRET_ACCESS_KEY (or give --endpoint URL of a local bus)',
          { cause: err },
        );
      throw err;
    } finally {
      client.destroy();
    }
    io.out(`${detail.decision} ${detail.approvalId} by cli:${by}: event ${detail.eventId} on the bus`);
    return 0;
  },
};

/** `err` and every cause under it. */
function causes(err: unknown): Error[] {
  const out: Error[] = [];
  for (let e: unknown = err; e instanceof Error && out.length < 8; e = e.cause) out.push(e);
  return out;
}
