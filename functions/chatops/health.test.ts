import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { ConfigurationError } from '../adapters/errors.ts';
import { createLogger } from '../adapters/logger.ts';
import { approvalKey } from '../lib/approval-seal.ts';
import { chatHealth, isHealthRequest, type HealthDeps } from './health.ts';
import { ChatOpsConfigSchema } from './run.ts';

const SLACK = 'slack-signing-secret-0123456789';
const KEY = 'k'.repeat(44);

function capture() {
  const lines: Record<string, unknown>[] = [];
  return { lines, logger: createLogger({ service: 'chatops', sink: (l) => lines.push(l) }) };
}

function deps(o: Partial<HealthDeps> = {}): HealthDeps {
  return {
    secrets: { slackSigningSecret: SLACK },
    chat: ChatOpsConfigSchema.parse({
      roles: [{ match: { platform: 'slack', user: 'U-OPS-SECRETIVE' }, role: 'operator' }],
    }),
    logger: capture().logger,
    approvalKey: () => Promise.resolve(approvalKey(KEY, 'test')),
    ...o,
  };
}

async function check(getDeps: () => Promise<HealthDeps>, fallback = capture().logger) {
  const r = await chatHealth(getDeps, fallback);
  return { status: r.statusCode, text: String(r.body), body: JSON.parse(String(r.body)) as Record<string, unknown> };
}

const request = (method: string, rawPath: string) =>
  ({ rawPath, requestContext: { http: { method } } }) as unknown as APIGatewayProxyEventV2;

describe('GET /chat/healthz', () => {
  it('is a GET of /chat/healthz only', () => {
    expect(isHealthRequest(request('GET', '/chat/healthz'))).toBe(true);
    expect(isHealthRequest(request('POST', '/chat/healthz'))).toBe(false);
    expect(isHealthRequest(request('GET', '/chat/slack'))).toBe(false);
  });

  it('ok: which platforms verify, how many role rules, approvals sealed; no secret, user or key in it', async () => {
    const r = await check(() => Promise.resolve(deps()));
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      status: 'ok',
      platforms: { slack: true, dingtalk: false, feishu: false },
      roles: { rules: 1, default: 'viewer' },
      approvals: 'sealed',
      problems: [],
    });
    for (const said of [SLACK, 'U-OPS-SECRETIVE', KEY]) expect(r.text).not.toContain(said);
  });

  it('unavailable (503) when the wiring fails: the reason goes to the log, not to the caller', async () => {
    const fallback = capture();
    const failing = () =>
      Promise.reject(new ConfigurationError('CHAT_SECRETS_PARAMETER (ssm:/gpu-reflex/prod/chat-secrets) is not JSON'));
    const r = await check(failing, fallback.logger);
    expect(r.status).toBe(503);
    expect(r.body).toMatchObject({ status: 'unavailable' });
    expect(r.text).not.toContain('chat-secrets');
    expect(fallback.lines).toEqual([
      expect.objectContaining({
        level: 'error',
        message: 'chat health: the wiring failed',
        error: expect.objectContaining({ name: 'ConfigurationError', message: expect.stringContaining('not JSON') }),
      }),
    ]);
  });

  it('unavailable (503) when no platform has its secret: every request would be refused', async () => {
    const r = await check(() => Promise.resolve(deps({ secrets: {} })));
    expect(r.status).toBe(503);
    expect(r.body).toMatchObject({
      status: 'unavailable',
      platforms: { slack: false, dingtalk: false, feishu: false },
      problems: ['no chat platform has its secret configured: every request is refused'],
    });
  });

  it('degraded (200) without an approval key, or with one that cannot be read, which the log says', async () => {
    expect(await check(() => Promise.resolve(deps({ approvalKey: () => Promise.resolve(undefined) })))).toMatchObject({
      status: 200,
      body: { status: 'degraded', approvals: 'no key configured' },
    });
    const log = capture();
    const denied = deps({
      logger: log.logger,
      approvalKey: () =>
        Promise.reject(new ConfigurationError('ssm:GetParameter denied on /gpu-reflex/prod/approval-key')),
    });
    const r = await check(() => Promise.resolve(denied));
    expect(r).toMatchObject({
      status: 200,
      body: {
        status: 'degraded',
        approvals: 'key unreadable',
        problems: ['approve and deny are refused: key unreadable'],
      },
    });
    expect(r.text).not.toContain('denied');
    expect(log.lines.map((l) => l.message)).toContain('chat health: the approval key could not be read');
  });
});
