/**
 * `GET /chat/healthz`: is the chat webhook alive, and configured well enough to answer anyone? For a
 * load balancer's or uptime check's probe and for the operator after a deploy. Unsigned, so it says
 * only what any caller may know: booleans and counts, never a secret, a user id, a parameter's
 * value or an error's text (the reasons go to the function's log, as `chat health` lines).
 *
 * - 503 `unavailable`: the wiring failed (the kubeconfig, a policy or the chat secrets could not be
 *   read: every chat request would fail the same way), or no platform has its secret (every request
 *   is refused 401).
 * - 200 `degraded`: chat answers, but `approve`/`deny` are refused (no approval key, or it cannot be
 *   read): a probe keeps the endpoint in service, the body says what is missing.
 * - 200 `ok`.
 *
 * It runs the same wiring a chat request runs (once per container, lib/wiring.ts `lazy`), so a probe
 * after a deploy warms the container and checks what the first message would need. It is not a chat
 * request: no metric line (a probe every few seconds must not count as traffic) and no Kubernetes call.
 */
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { createLogger, type Logger } from '../adapters/logger.ts';
import type { ApprovalKey } from '../lib/approval-seal.ts';
import { CHAT_PLATFORMS, type ChatPlatform, type ChatSecrets } from './core/signature.ts';
import type { ChatOpsConfig } from './run.ts';

export const HEALTH_PATH = '/chat/healthz';

/** What the health check reads of the wiring: the secrets' presence, the roles, the approval key. */
export interface HealthDeps {
  secrets: ChatSecrets;
  chat: ChatOpsConfig;
  logger: Logger;
  approvalKey?: () => Promise<ApprovalKey | undefined>;
}

export interface ChatHealth {
  status: 'ok' | 'degraded' | 'unavailable';
  /** Each platform: true when the secret its requests are verified with is configured. */
  platforms?: Record<ChatPlatform, boolean>;
  /** How many role rules the roles file has, and the role of everyone no rule names. */
  roles?: { rules: number; default: ChatOpsConfig['default'] };
  /** Whether `approve`/`deny` can seal a decision (lib/approval-seal.ts). */
  approvals?: 'sealed' | 'no key configured' | 'key unreadable';
  /** What is wrong, in words that name no value. */
  problems: string[];
}

/** The secret a platform's requests are verified with (core/signature.ts verify*). */
const VERIFIED_WITH: Record<ChatPlatform, keyof ChatSecrets> = {
  slack: 'slackSigningSecret',
  dingtalk: 'dingtalkAppSecret',
  feishu: 'feishuVerificationToken',
};

/** A GET of the health path (API Gateway's rawPath carries no stage for the `$default` stage). */
export function isHealthRequest(request: APIGatewayProxyEventV2): boolean {
  return request.requestContext?.http?.method === 'GET' && request.rawPath === HEALTH_PATH;
}

/** The health check's answer; `getDeps` is the function's wiring (it may throw: that is `unavailable`). */
export async function chatHealth(
  getDeps: () => HealthDeps | Promise<HealthDeps>,
  fallbackLogger: Logger = createLogger({ service: 'chatops' }),
): Promise<APIGatewayProxyStructuredResultV2> {
  let d: HealthDeps;
  try {
    d = await getDeps();
  } catch (err) {
    fallbackLogger.error('chat health: the wiring failed', { error: err });
    return answer({
      status: 'unavailable',
      problems: ['the configuration could not be read (the function log says which and why)'],
    });
  }
  const log = d.logger.child({ function: 'chatops', check: 'health' });
  const platforms = Object.fromEntries(CHAT_PLATFORMS.map((p) => [p, Boolean(d.secrets[VERIFIED_WITH[p]])])) as Record<
    ChatPlatform,
    boolean
  >;
  const problems: string[] = [];
  if (!Object.values(platforms).some(Boolean))
    problems.push('no chat platform has its secret configured: every request is refused');
  let approvals: NonNullable<ChatHealth['approvals']> = 'no key configured';
  try {
    if (await d.approvalKey?.()) approvals = 'sealed';
  } catch (err) {
    approvals = 'key unreadable';
    log.error('chat health: the approval key could not be read', { error: err });
  }
  if (approvals !== 'sealed') problems.push(`approve and deny are refused: ${approvals}`);
  const status = problems.length === 0 ? 'ok' : Object.values(platforms).some(Boolean) ? 'degraded' : 'unavailable';
  if (status !== 'ok') log.warn('chat health', { status, problems });
  return answer({
    status,
    platforms,
    roles: { rules: d.chat.roles.length, default: d.chat.default },
    approvals,
    problems,
  });
}

function answer(h: ChatHealth): APIGatewayProxyStructuredResultV2 {
  return {
    statusCode: h.status === 'unavailable' ? 503 : 200,
    headers: { 'content-type': 'application/json', 'cache-control': 'no-store' },
    body: JSON.stringify(h),
  };
}
