/**
 * One chat command, carried out through the same adapters as the automation: authorised by role,
 * `--dry-run` through the dry-run ports (the wiring's decorator, chosen per command), published
 * as a ChatOps Command event (who, what, the answer), answered in words.
 */
import * as z from 'zod';
import { CHATOPS_COMMAND, SCHEMA_VERSION, SOURCES, type ChatOpsCommandDetail } from '../../events/index.ts';
import type { EventPublisher } from '../adapters/bus.ts';
import type { Clock } from '../adapters/clock.ts';
import { dryRunPorts, type DryRunnable } from '../adapters/kube/dry-run.ts';
import type { ApprovalKey } from '../lib/approval-seal.ts';
import { fnv1a } from '../lib/hash.ts';
import { parseConfigText } from '../lib/yaml-text.ts';
import type { QuotaConfig } from '../quota/index.ts';
import type { Notifier } from '../adapters/chat/notifier.ts';
import { DryRunNotifier, DryRunPublisher } from '../lib/dry-run.ts';
import type { Logger } from '../adapters/logger.ts';
import type { MigRebalanceConfig } from '../mig/index.ts';
import type { Policy } from '../remediate/index.ts';
import { dryRunCloudPools } from '../adapters/alicloud/dry-run.ts';
import { approvalAnswer, cordonAnswer, drainAnswer, migAnswer, quotaAnswer, statusAnswer } from './answers.ts';
export { HELD_IN_CHAT } from './answers.ts';
import { poolScale, quarantine, type CommandPorts, type PoolPorts } from './actions.ts';
import { BadInputError, ForbiddenError, isRetryable, NotFoundError } from '../adapters/errors.ts';
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

/**
 * Runs one command text for `who`; returns the answer. Publishes ChatOps Command whatever happens (refused by the
 * bus for now after the command was carried out: logged whole, the answer still given).
 */
export async function runChatCommand(deps: ChatDeps, who: ChatUser, text: string): Promise<string> {
  return (await runChat(deps, who, text)).answer;
}

/** `runChatCommand`, saying also whether an approval was decided (a button's message then shows who). */
export async function runChat(deps: ChatDeps, who: ChatUser, text: string): Promise<ChatOutcome> {
  const parsed = parseCommand(text);
  const now = deps.clock.now();
  const commandRecord = (command: string, args: string[], result: string, dryRun?: boolean) => {
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
    return detail;
  };
  const publish = async (command: string, args: string[], result: string, dryRun?: boolean) => {
    const detail = commandRecord(command, args, result, dryRun);
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
  const usage = COMMANDS[c.name].usage;
  let answer = '';
  let decided: ChatOutcome['decided'];
  try {
    switch (c.name) {
      case 'help':
        answer = helpText();
        break;
      case 'status':
        answer = await statusAnswer(ports.kube, c.node);
        break;
      case 'cordon':
      case 'uncordon':
        answer = await cordonAnswer(ports, c);
        break;
      case 'drain':
        answer = await drainAnswer(ports, c);
        break;
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
      case 'quota':
        answer = await quotaAnswer(ports, deps.quota, c);
        break;
      case 'mig':
        answer = await migAnswer(ports, deps.mig, c);
        break;
      case 'approve':
      case 'deny':
        ({ answer, decided } = await approvalAnswer(
          ports,
          { pools: poolsFor(deps, false), approvalKey: deps.approvalKey, who, now },
          c,
        ));
        break;
    }
  } catch (err) {
    // A name that is not there, a refusal by the cluster: the person is told in words (not the
    // handler's `already-done`, which is for a bus event), and the command is recorded as answered.
    const said = failureWords(c, err);
    if (said === undefined) throw err;
    answer = said;
  }
  try {
    await publish(c.name, args, answer, c.dryRun);
  } catch (err) {
    // Carried out already (an approval closed, a node cordoned): a thrown command would tell the person it failed,
    // and a Slack press would keep its buttons. A refusal the bus may lift: the record goes to the log, whole.
    if (!isRetryable(err)) throw err;
    deps.logger.error('ChatOps Command not published: the command was carried out', {
      command: commandRecord(c.name, args, answer, c.dryRun),
      error: err,
    });
  }
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
