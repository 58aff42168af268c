/**
 * One chat command, carried out through the same adapters as the automation: authorised by role,
 * `--dry-run` through the dry-run ports (the wiring's decorator, chosen per command), published
 * as a ChatOps Command event (who, what, the answer), answered in words.
 */
import * as z from 'zod';
import {
  APPROVAL_DECIDED,
  CHATOPS_COMMAND,
  SCHEMA_VERSION,
  SOURCES,
  type ApprovalDecidedDetail,
  type ChatOpsCommandDetail,
} from '../../events/index.ts';
import type { EventPublisher } from '../adapters/bus.ts';
import type { Clock } from '../adapters/clock.ts';
import { dryRunPorts, type DryRunnable } from '../adapters/kube/dry-run.ts';
import { APPROVAL_KEY_PARAMETER_ENV, sealDecision, type ApprovalKey } from '../lib/approval-seal.ts';
import { AUTOSCALE_APPROVALS_SHARD, getApproval, listApprovals, MIG_APPROVALS_SHARD } from '../lib/approvals.ts';
import { fnv1a } from '../lib/hash.ts';
import { STATE_LABEL } from '../lib/node-state.ts';
import { parseConfigText } from '../lib/yaml-text.ts';
import { drainOnce } from '../adapters/kube/drain.ts';
import { requestsGpu } from '../adapters/kube/model.ts';
import { planTable as migPlanTable } from '../mig/index.ts';
import { planMig } from '../mig/index.ts';
import { readMigFleet } from '../mig/index.ts';
import type { QuotaConfig } from '../quota/index.ts';
import { planQuotas } from '../quota/index.ts';
import { quotaFacts } from '../quota/index.ts';
import type { Notifier } from '../adapters/chat/notifier.ts';
import { DryRunNotifier, DryRunPublisher } from '../lib/dry-run.ts';
import type { Logger } from '../adapters/logger.ts';
import type { MigRebalanceConfig } from '../mig/index.ts';
import type { Policy } from '../remediate/index.ts';
import { fenceWords, heldNodes, type HeldNode } from '../remediate/index.ts';
import { dryRunCloudPools } from '../adapters/alicloud/dry-run.ts';
import {
  CHAT_APPROVALS_SHARD,
  decideHeldPlan,
  decidePoolScale,
  migApply,
  poolScale,
  quarantine,
  quotaRollback,
  quotaShow,
  type CommandPorts,
  type PoolPorts,
} from './actions.ts';
import { BadInputError, ForbiddenError, NotFoundError } from '../adapters/errors.ts';
import {
  COMMANDS,
  helpText,
  parseCommand,
  quoted,
  ROLE_RANK,
  roleNeeded,
  type ChatCommand,
  type Role,
} from './core/command.ts';
import type { ChatPlatform } from './core/signature.ts';

export interface ChatUser {
  platform: ChatPlatform;
  id: string;
  name?: string;
  channel: string;
}

const Match = z
  .object({
    platform: z.enum(['slack', 'dingtalk', 'feishu']).optional(),
    user: z.string().optional(),
    channel: z.string().optional(),
  })
  .strict();
export const ChatOpsConfigSchema = z
  .object({
    /** First match wins; a rule names a platform, a user id, a channel id, or several. */
    roles: z.array(z.object({ match: Match, role: z.enum(['viewer', 'operator', 'admin']) }).strict()).default([]),
    /** Everyone no rule names. */
    default: z.enum(['none', 'viewer', 'operator', 'admin']).default('viewer'),
    /** A higher role for a command than its own (`pool: admin`); never a lower one. */
    require: z
      .partialRecord(
        z.enum([
          'help',
          'status',
          'cordon',
          'uncordon',
          'drain',
          'approve',
          'deny',
          'quarantine',
          'mig',
          'quota',
          'pool',
        ]),
        z.enum(['viewer', 'operator', 'admin']),
      )
      .default({}),
  })
  .strict();
export type ChatOpsConfig = z.output<typeof ChatOpsConfigSchema>;

export class ChatOpsConfigError extends Error {
  override name = 'ChatOpsConfigError';
}

export function parseChatOpsConfig(text: string, source = 'chatops config'): ChatOpsConfig {
  return parseConfigText(text, source, ChatOpsConfigSchema, (m) => new ChatOpsConfigError(m));
}

export function roleOf(config: ChatOpsConfig, who: ChatUser): Role | 'none' {
  const rule = config.roles.find(
    (r) =>
      (!r.match.platform || r.match.platform === who.platform) &&
      (!r.match.user || r.match.user === who.id) &&
      (!r.match.channel || r.match.channel === who.channel),
  );
  return rule?.role ?? config.default;
}

export interface ChatDeps {
  kube: DryRunnable;
  publisher: EventPublisher;
  /** Where the cores' own notices go (remediation's, the MIG rebalancer's), as when they run by themselves. */
  notifier: Notifier;
  clock: Clock;
  logger: Logger;
  config: ChatOpsConfig;
  /** The quota rewriter's teams, when this deployment has them (`quota show/plan/rollback`). */
  quota?: QuotaConfig;
  /** Remediation's policy (`quarantine`: blast radius, fence backend, approvals). */
  policy: Policy;
  /** The MIG rebalancer's settings (`mig apply`). */
  mig: MigRebalanceConfig;
  /** The autoscaler's policy and cloud port (`pool scale`), when it manages pools here. */
  pools?: PoolPorts;
  /**
   * The approval key that seals a remediation's `Approval Decided` (lib/approval-seal.ts), read
   * when an `approve`/`deny` first needs it; undefined where this deployment has none.
   */
  approvalKey?: () => Promise<ApprovalKey | undefined>;
}

/**
 * The ports a command runs on: for `--dry-run` every one that acts is the dry-run decorator (lib/wiring.ts's choice,
 * per command).
 */
function portsFor(deps: ChatDeps, dryRun: boolean, holder: string): CommandPorts {
  const base = { clock: deps.clock, logger: deps.logger, holder, dryRun };
  if (!dryRun) return { ...base, kube: deps.kube, publisher: deps.publisher, notifier: deps.notifier };
  return {
    ...base,
    kube: dryRunPorts(deps.kube, () => {}),
    publisher: new DryRunPublisher(deps.publisher, deps.logger),
    notifier: new DryRunNotifier(deps.logger),
  };
}

function poolsFor(deps: ChatDeps, dryRun: boolean): PoolPorts | undefined {
  return deps.pools && dryRun ? { ...deps.pools, cloud: dryRunCloudPools(deps.pools.cloud, () => {}) } : deps.pools;
}

async function status(kube: DryRunnable, node: string | undefined): Promise<string> {
  if (node) {
    const n = await kube.nodes.get(node);
    const gpus = n.allocatable['nvidia.com/gpu'];
    return (
      `${n.name}: ${n.ready === false ? 'NotReady' : 'Ready'}${n.unschedulable ? ', cordoned' : ''}; gpu-reflex ` +
      `state ${n.labels[STATE_LABEL] ?? 'healthy'}` +
      (n.taints.length > 0
        ? '; taints ' + n.taints.map((t) => `${t.key}${t.value ? `=${t.value}` : ''}:${t.effect}`).join(', ')
        : '') +
      (gpus ? `; ${gpus} GPUs allocatable` : '')
    );
  }
  const [nodes, pods, approvals] = await Promise.all([kube.nodes.list(), kube.pods.list(), listApprovals(kube.state)]);
  const byState = new Map<string, number>();
  for (const n of nodes)
    byState.set(n.labels[STATE_LABEL] ?? 'healthy', (byState.get(n.labels[STATE_LABEL] ?? 'healthy') ?? 0) + 1);
  const pending = pods.filter((p) => p.phase === 'Pending' && !p.nodeName && requestsGpu(p)).length;
  const counts =
    `${nodes.length} nodes ` +
    `(${[...byState].map(([s, k]) => `${k} ${s}`).join(', ')}), ${nodes.filter((n) => n.unschedulable).length} ` +
    `cordoned; ${pending} GPU pod${pending === 1 ? '' : 's'} pending`;
  return [counts, ...heldLines(heldNodes(nodes, approvals))].join('\n');
}

/** At most this many held nodes in one chat answer; the rest are counted and `gpu-reflex status` named. */
export const HELD_IN_CHAT = 10;

/** Each held node in one line of words: state, what and why, the fence, the approval to decide. */
function heldLines(held: readonly HeldNode[]): string[] {
  const lines = held.slice(0, HELD_IN_CHAT).map((h) => {
    const what = h.incidents.map((i) => {
      const fence = fenceWords(i.fence);
      return `${i.gpu ?? 'node'} ${i.why} since ${i.since}${fence ? `, fence ${fence}` : ''}`;
    });
    const ask = h.approvals.map((a) => `approve ${a.id} (${a.action}, expires ${a.expiresAt})`);
    return (
      `• ${h.node}: ${h.state}${h.cordoned ? ', cordoned' : ''}` +
      (what.length > 0 ? `; ${what.join('; ')}` : '') +
      (ask.length > 0 ? `; waiting for ${ask.join(' or ')}` : '')
    );
  });
  if (held.length > HELD_IN_CHAT)
    lines.push(`and ${held.length - HELD_IN_CHAT} more held nodes: gpu-reflex status --kubeconfig F lists all`);
  return lines;
}

/** Why `who` may not run `c`, in words; undefined when they may. */
export function refusal(config: ChatOpsConfig, who: ChatUser, c: ChatCommand): string | undefined {
  const role = roleOf(config, who);
  const need = roleNeeded(c, config.require);
  if (role !== 'none' && ROLE_RANK[role] >= ROLE_RANK[need]) return undefined;
  return (
    `not allowed: ${c.name} needs the ${need} role; ${who.platform} user ${who.id} ` +
    `has ${role === 'none' ? 'none' : `only ${role}`}`
  );
}

/** What a command came to: the answer, and for approve/deny whether a decision was sent or made. */
export interface ChatOutcome {
  answer: string;
  decided?: { id: string; decision: 'approved' | 'rejected' };
}

/** Runs one command text for `who`; returns the answer. Publishes ChatOps Command whatever happens. */
export async function runChatCommand(deps: ChatDeps, who: ChatUser, text: string): Promise<string> {
  return (await runChat(deps, who, text)).answer;
}

/** `runChatCommand`, saying also whether an approval was decided (a button's message then shows who). */
export async function runChat(deps: ChatDeps, who: ChatUser, text: string): Promise<ChatOutcome> {
  const parsed = parseCommand(text);
  const now = deps.clock.now();
  const publish = async (command: string, args: string[], result: string, dryRun?: boolean) => {
    const detail: ChatOpsCommandDetail = {
      schemaVersion: SCHEMA_VERSION,
      // Who, when and what: two commands in one millisecond (one clock step in a simulation) stay two events.
      eventId: `chat:${who.platform}:${who.id.slice(0, 64)}:${now}:${fnv1a(text)}`.slice(0, 128),
      occurredAt: new Date(now).toISOString(),
      user: { platform: who.platform, id: who.id.slice(0, 128), ...(who.name ? { name: who.name.slice(0, 128) } : {}) },
      channel: who.channel.slice(0, 128) || 'unknown',
      text: (text.trim() || '(empty)').slice(0, 4000),
      command: command.slice(0, 64),
      args: args.slice(0, 32).map((a) => a.slice(0, 256)),
      result: result.slice(0, 2048),
      ...(dryRun !== undefined ? { dryRun } : {}),
    };
    await deps.publisher.publish([{ source: SOURCES.chatops, detailType: CHATOPS_COMMAND, detail }]);
  };
  if (!parsed.ok) {
    await publish(parsed.words[0] ?? 'help', parsed.words.slice(1), `refused: ${parsed.error.split('\n')[0]}`);
    return { answer: parsed.error };
  }
  const c: ChatCommand = parsed.command;
  const args = parsed.words.slice(1);
  const refused = refusal(deps.config, who, c);
  if (refused) {
    await publish(c.name, args, refused, c.dryRun);
    return { answer: refused };
  }
  const ports = portsFor(
    deps,
    c.dryRun,
    `chatops-${who.platform}-${who.id}-${now}`.replace(/[^A-Za-z0-9.-]/g, '-').slice(0, 128),
  );
  const kube = ports.kube;
  const usage = COMMANDS[c.name].usage;
  let answer = '';
  let decided: ChatOutcome['decided'];
  try {
    switch (c.name) {
      case 'help':
        answer = helpText();
        break;
      case 'status':
        answer = await status(kube, c.node);
        break;
      case 'cordon':
      case 'uncordon': {
        const changed = c.name === 'cordon' ? await kube.nodes.cordon(c.node) : await kube.nodes.uncordon(c.node);
        const verb = c.name === 'cordon' ? 'cordoned' : 'uncordoned';
        answer = c.dryRun
          ? `dry run: would ` +
            `have ${changed ? verb : `left ${c.node} as it is (already ${verb})`}${changed ? ` ${c.node}` : ''}`
          : changed
            ? `${verb} ${c.node}`
            : `${c.node} was already ${verb}`;
        break;
      }
      case 'drain': {
        // One pass, as `kubectl drain` does per attempt; blocked pods are said, a second drain retries them.
        const r = await drainOnce(kube, c.node);
        const pods = (xs: string[]) => xs.slice(0, 5).join(', ') + (xs.length > 5 ? ` and ${xs.length - 5} more` : '');
        const parts = [
          r.evicted.length > 0
            ? `${c.dryRun ? 'would evict' : 'evicting'} ${r.evicted.length} pod(s) (${pods(r.evicted)})`
            : 'no pod to evict',
          ...(r.blocked.length > 0
            ? [
                `${r.blocked.length} blocked for now ` +
                  `(${pods(r.blocked.map((b) => b.pod))}: ${r.blocked[0]!.reason}); ` +
                  `drain again to retry`,
              ]
            : []),
          ...(r.skipped.length > 0 ? [`${r.skipped.length} DaemonSet/mirror pod(s) left`] : []),
        ];
        answer =
          `${c.dryRun ? 'dry run: would have cordoned and drained' : 'cordoned and draining'} ${c.node}: ` +
          `${parts.join('; ')}`;
        break;
      }
      case 'quarantine':
        answer = await quarantine(ports, { policy: deps.policy, who, node: c.node, gpu: c.gpu, usage });
        break;
      case 'pool':
        answer = await poolScale(ports, {
          pools: poolsFor(deps, c.dryRun),
          approvalTtlMinutes: deps.policy.approvals.ttlMinutes,
          pool: c.pool,
          size: c.size,
          usage,
        });
        break;
      case 'quota': {
        if (!deps.quota) {
          answer =
            `no teams are configured here (QUOTA_CONFIG_FILE): there are no quotas ` +
            `to ${c.sub === 'plan' ? 'plan' : c.sub}`;
          break;
        }
        if (c.sub === 'show') {
          answer = await quotaShow(ports, deps.quota);
          break;
        }
        if (c.sub === 'rollback') {
          answer = await quotaRollback(ports, deps.quota, c.namespace);
          break;
        }
        const [nodes, pods, quotas] = await Promise.all([
          kube.nodes.list(),
          kube.pods.list(),
          kube.quotas.listQuotas(),
        ]);
        const plan = planQuotas(deps.quota, quotaFacts(deps.quota, nodes, pods, quotas));
        const lines = plan.namespaces.flatMap((n) =>
          n.changes.map((ch) => `${n.namespace}: ${ch.key} ${ch.from ?? 'unset'} → ${ch.to}`),
        );
        answer = [
          lines.length > 0
            ? `rewrite-quotas would change ${lines.length} quota value(s):`
            : 'every team quota is as rewrite-quotas would write it',
          ...lines,
          ...plan.warnings.map((w) => `warning: ${w}`),
        ].join('\n');
        break;
      }
      case 'mig': {
        if (c.sub === 'apply') {
          answer = await migApply(ports, deps.mig);
          break;
        }
        const [nodes, pods] = await Promise.all([kube.nodes.list(), kube.pods.list()]);
        const fleet = readMigFleet(nodes, pods);
        // As rebalance-mig would plan: with its preemption policy.
        answer = migPlanTable(
          planMig(fleet.nodes, fleet.pending, deps.mig.preemption ? { preemption: deps.mig.preemption } : {}),
          fleet.notes,
        ).join('\n');
        break;
      }
      case 'approve':
      case 'deny': {
        const decision = c.name === 'approve' ? 'approved' : 'rejected';
        // The store says whether there is anything left to decide; remediate-approve's own
        // exactly-once guard still decides two clicks that both found it open.
        // A pool scale is chat's own approval: decided and carried out here, once.
        // A plan a scheduled function holds (a preempting MIG relayout, a costly scale-out): decided
        // here, carried out by that function's next round.
        const held = c.dryRun ? undefined : await decideHeldPlan(ports, c.id, decision, `${who.platform}:${who.id}`);
        if (held) {
          answer = held.answer;
          if (held.decided) decided = { id: c.id, decision };
          break;
        }
        const pool = c.dryRun
          ? undefined
          : await decidePoolScale(ports, poolsFor(deps, false), c.id, decision, `${who.platform}:${who.id}`);
        if (pool) {
          answer = pool.answer;
          if (pool.decided) decided = { id: c.id, decision };
          break;
        }
        const rec =
          (await getApproval(kube.state, c.id)) ??
          (await getApproval(kube.state, c.id, CHAT_APPROVALS_SHARD)) ??
          (await getApproval(kube.state, c.id, MIG_APPROVALS_SHARD)) ??
          (await getApproval(kube.state, c.id, AUTOSCALE_APPROVALS_SHARD));
        if (!rec) {
          answer = `no approval ${c.id} is waiting (unknown id): nothing done`;
          break;
        }
        if (rec.status !== 'open') {
          answer = `${c.id} is already ${rec.status}${rec.decidedBy ? ` by ${rec.decidedBy}` : ''}: nothing more done`;
          break;
        }
        if (now >= Date.parse(rec.expiresAt)) {
          answer =
            `${c.id} expired at ${rec.expiresAt}: too late, nothing done (${rec.action} on ${rec.node} ` +
            `stays held back)`;
          break;
        }
        if (c.dryRun) {
          answer =
            `dry run: would have ${decision} ${c.id} ` +
            `(${rec.scale ? `${rec.scale.pool} ${rec.scale.from} → ${rec.scale.to}` : `${rec.action} on ${rec.node}`})`;
          break;
        }
        // remediate-approve believes only a sealed decision (lib/approval-seal.ts); the role was checked above.
        const key = await deps.approvalKey?.();
        if (!key) {
          answer =
            `cannot decide ${c.id}: this deployment has no approval key (${APPROVAL_KEY_PARAMETER_ENV}), and ` +
            `remediate-approve refuses a decision it cannot prove; nothing done`;
          break;
        }
        const detail: ApprovalDecidedDetail = {
          schemaVersion: SCHEMA_VERSION,
          eventId: `decision:${c.id}:${who.platform}:${who.id}:${now}`.slice(0, 128),
          occurredAt: new Date(now).toISOString(),
          approvalId: c.id,
          decision,
          decidedBy: {
            platform: who.platform,
            id: who.id.slice(0, 128),
            ...(who.name ? { name: who.name.slice(0, 128) } : {}),
          },
        };
        await deps.publisher.publish([
          { source: SOURCES.chatops, detailType: APPROVAL_DECIDED, detail: sealDecision(key, detail) },
        ]);
        decided = { id: c.id, decision };
        answer =
          `${decision} ${c.id} (${rec.action} on ${rec.node}): ` +
          `remediate-approve ${decision === 'approved' ? 'carries it out' : 'closes it'}, once however often ` +
          `it is clicked`;
        break;
      }
    }
  } catch (err) {
    // A name that is not there, a refusal by the cluster: the person is told in words (not the
    // handler's `already-done`, which is for a bus event), and the command is recorded as answered.
    const said = failureWords(c, err);
    if (said === undefined) throw err;
    answer = said;
  }
  await publish(c.name, args, answer, c.dryRun);
  return { answer, ...(decided ? { decided } : {}) };
}

/** What a person is told when the cluster says no; undefined for a failure worth a retry (it is thrown). */
function failureWords(c: ChatCommand, err: unknown): string | undefined {
  if (err instanceof NotFoundError)
    return 'node' in c && c.node !== undefined
      ? `no node ${quoted(c.node)} in this cluster (kubectl get nodes lists the names)`
      : `not found: ${err.message}`;
  if (err instanceof ForbiddenError)
    return `the cluster does not let gpu-reflex do that: ${err.message} (its RBAC, infra/k8s); nothing done`;
  if (err instanceof BadInputError) return `the cluster refused it: ${err.message}; nothing done`;
  return undefined;
}
