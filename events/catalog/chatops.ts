/**
 * Chat-side events: `ChatOps Command` (a person asked for something), `ChatOps Command Requested`
 * (a long one, left for chatops-worker), `Approval Requested` (a plan needs a person) and
 * `Approval Decided`. Examples: ./chatops-command.example.json, ./chatops-command-requested.example.json,
 * ./approval-requested.example.json, ./approval-decided.example.json.
 */
import * as z from 'zod';
import { actorBase, Timestamp } from '../common.ts';

export const CHATOPS_COMMAND = 'ChatOps Command';
export const CHATOPS_COMMAND_REQUESTED = 'ChatOps Command Requested';
export const APPROVAL_REQUESTED = 'Approval Requested';
export const APPROVAL_DECIDED = 'Approval Decided';

export const CHAT_PLATFORMS = ['slack', 'dingtalk', 'feishu'] as const;
const ChatUser = z
  .object({ platform: z.enum(CHAT_PLATFORMS), id: z.string().min(1).max(128), name: z.string().max(128).optional() })
  .strict();
const ApprovalId = z.string().regex(/^apr-[a-z0-9-]{4,64}$/, 'expected an approval id like apr-7f3c9a12');

export const ChatOpsCommandDetailSchema = z
  .object({
    ...actorBase,
    user: ChatUser,
    channel: z.string().min(1).max(128),
    text: z.string().min(1).max(4000),
    command: z.string().min(1).max(64),
    args: z.array(z.string().max(256)).max(32),
    /** What came of it: the answer given, or why it was refused. */
    result: z.string().max(2048).optional(),
    dryRun: z.boolean().optional(),
  })
  .strict();
export type ChatOpsCommandDetail = z.infer<typeof ChatOpsCommandDetailSchema>;

/**
 * A chat command that can outlast the platform's 3 seconds (drain, mig apply, …), answered at once
 * and left for chatops-worker, which answers where the platform takes a late answer (Slack: the
 * response_url; Feishu: a reply to the message through its API; DingTalk: the conversation's
 * sessionWebhook). The request travels as the platform signed it: the worker believes who asked,
 * what, and where to answer only by that signature (Slack's; Feishu's signature and verification
 * token; DingTalk's sign and the webhook's MAC over the body), never because an event on the bus
 * says so.
 */
const SlackRequested = z
  .object({
    ...actorBase,
    platform: z.literal('slack'),
    request: z
      .object({
        /** X-Slack-Request-Timestamp. */
        timestamp: z.string().regex(/^\d{1,12}$/),
        /** X-Slack-Signature (`v0=` + 64 hex). */
        signature: z.string().regex(/^v0=[0-9a-f]{64}$/),
        /** The raw form body, byte for byte. */
        body: z.string().min(1).max(16_000),
      })
      .strict(),
  })
  .strict();
const FeishuRequested = z
  .object({
    ...actorBase,
    platform: z.literal('feishu'),
    request: z
      .object({
        /** X-Lark-Request-Timestamp, X-Lark-Request-Nonce, X-Lark-Signature: where an Encrypt Key is set. */
        timestamp: z
          .string()
          .regex(/^\d{1,12}$/)
          .optional(),
        nonce: z.string().min(1).max(128).optional(),
        signature: z
          .string()
          .regex(/^[0-9a-f]{64}$/)
          .optional(),
        /** The raw JSON body (`{"encrypt": …}` with an Encrypt Key), byte for byte. */
        body: z.string().min(1).max(16_000),
      })
      .strict(),
  })
  .strict();
/**
 * DingTalk's `sign` covers only the timestamp, not the body: the webhook adds `mac`, an HMAC-SHA256
 * with the app secret over the timestamp, sign and body it verified, so the worker believes only a
 * request that passed the webhook (functions/chatops/core/signature.ts `dingtalkRequestMac`).
 */
const DingTalkRequested = z
  .object({
    ...actorBase,
    platform: z.literal('dingtalk'),
    request: z
      .object({
        /** Header `timestamp` (ms). */
        timestamp: z.string().regex(/^\d{1,16}$/),
        /** Header `sign` (base64 HMAC-SHA256). */
        sign: z.string().regex(/^[A-Za-z0-9+/=]{1,128}$/),
        /** The raw JSON body, byte for byte. */
        body: z.string().min(1).max(16_000),
        mac: z.string().regex(/^[0-9a-f]{64}$/),
      })
      .strict(),
  })
  .strict();
export const ChatOpsCommandRequestedDetailSchema = z.discriminatedUnion('platform', [
  SlackRequested,
  FeishuRequested,
  DingTalkRequested,
]);
export type ChatOpsCommandRequestedDetail = z.infer<typeof ChatOpsCommandRequestedDetailSchema>;

export const ApprovalRequestedDetailSchema = z
  .object({
    ...actorBase,
    approvalId: ApprovalId,
    /** The function whose plan waits: `remediate`, `rebalance-mig`, `autoscale-pools`, `rewrite-quotas`. */
    requestedBy: z.string().min(1).max(64),
    summary: z.string().min(1).max(2048),
    /** The plan itself, as plain data, so an approval replays exactly what was shown. */
    plan: z.record(z.string(), z.unknown()),
    expiresAt: Timestamp,
  })
  .strict();
export type ApprovalRequestedDetail = z.infer<typeof ApprovalRequestedDetailSchema>;

export const ApprovalDecidedDetailSchema = z
  .object({
    ...actorBase,
    approvalId: ApprovalId,
    decision: z.enum(['approved', 'rejected', 'expired']),
    /** Who decided: a chat user, or `cli` for `gpu-reflex approve --by NAME`. */
    decidedBy: ChatUser.extend({ platform: z.enum([...CHAT_PLATFORMS, 'cli']) }).optional(),
    comment: z.string().max(1024).optional(),
    /**
     * HMAC-SHA256 (base64url) over the decision's fields, with a key only chatops and
     * remediate-approve read (functions/lib/approval-seal.ts). remediate-approve refuses a decision
     * without it or with a wrong one: the source and `decidedBy` alone can be written by anyone who
     * may put events on the bus. Optional here so such a decision parses and is refused by name.
     */
    seal: z
      .string()
      .regex(/^[A-Za-z0-9_-]{43}$/, 'a base64url HMAC-SHA256 (43 characters)')
      .optional(),
  })
  .strict();
export type ApprovalDecidedDetail = z.infer<typeof ApprovalDecidedDetailSchema>;
