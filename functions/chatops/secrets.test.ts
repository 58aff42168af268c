import { describe, expect, it } from 'vitest';
import { chatSecretsFromEnv } from './secrets.ts';

const PARAM = { CHAT_SECRETS_PARAMETER: '/gpu-reflex/prod/chat-secrets' };
const reading = (text: string) => {
  const asked: string[] = [];
  return { asked, read: async (p: string) => (asked.push(p), text) };
};

describe('chat secrets from Parameter Store', () => {
  it('reads the platforms’ secrets from the SecureString the environment names', async () => {
    const r = reading(
      JSON.stringify({ slackSigningSecret: 'sl', feishuVerificationToken: 'fv', feishuAppSecret: 'fa' }),
    );
    expect(await chatSecretsFromEnv(PARAM, r.read)).toEqual({
      slackSigningSecret: 'sl',
      feishuVerificationToken: 'fv',
      feishuAppSecret: 'fa',
    });
    expect(r.asked).toEqual(['/gpu-reflex/prod/chat-secrets']);
  });

  it('lets a secret set in the environment win, and reads nothing where no parameter is named', async () => {
    const r = reading(JSON.stringify({ slackSigningSecret: 'from-ssm', dingtalkAppSecret: 'dt' }));
    expect(await chatSecretsFromEnv({ ...PARAM, CHAT_SLACK_SIGNING_SECRET: 'from-env' }, r.read)).toEqual({
      slackSigningSecret: 'from-env',
      dingtalkAppSecret: 'dt',
    });
    const none = reading('{}');
    expect(await chatSecretsFromEnv({ CHAT_DINGTALK_APP_SECRET: 'x' }, none.read)).toEqual({ dingtalkAppSecret: 'x' });
    expect(none.asked).toEqual([]);
  });

  it('names the parameter and the field that is wrong, never a value', async () => {
    await expect(chatSecretsFromEnv(PARAM, reading('sl-secret').read)).rejects.toThrow(
      'CHAT_SECRETS_PARAMETER (ssm:/gpu-reflex/prod/chat-secrets) is not JSON',
    );
    await expect(
      chatSecretsFromEnv(PARAM, reading('{"slackSigningSecret":"s3cr3t","slackSecret":"x"}').read),
    ).rejects.toThrow(/unknown field\(s\) slackSecret \(known: slackSigningSecret/);
    const err = await chatSecretsFromEnv(PARAM, reading('{"slackSigningSecret":""}').read).catch((e: Error) => e);
    expect(String(err)).toMatch(/slackSigningSecret: must be a non-empty string/);
    const leak = await chatSecretsFromEnv(PARAM, reading('{"slackSigningSecret":"s3cr3t","x":1}').read).catch(
      (e: Error) => e,
    );
    expect(String(leak)).not.toContain('s3cr3t');
  });
});

describe('chatops wiring', () => {
  it('verifies with the secrets it read from Parameter Store through the SDK (what a deployment does)', async () => {
    const { fakeSsm, AWS_ENV } = await import('../adapters/ssm-stand-in.ts');
    const { withEnv } = await import('../../infra/local/stack-env.ts');
    const { mkdtempSync, writeFileSync } = await import('node:fs');
    const { join } = await import('node:path');
    const { tmpdir } = await import('node:os');
    const { wireChat } = await import('./handler.ts');
    const ssm = await fakeSsm((name) => ({
      status: 200,
      body: {
        Parameter: {
          Name: name,
          Type: 'SecureString',
          Value: JSON.stringify({ slackSigningSecret: 'from-parameter-store', feishuAppSecret: 'fa' }),
          Version: 1,
        },
      },
    }));
    const kubeconfig = join(mkdtempSync(join(tmpdir(), 'chat-secrets-')), 'kubeconfig');
    writeFileSync(
      kubeconfig,
      'apiVersion: v1\nkind: Config\nclusters: [{ name: c, cluster: { server: "http://127.0.0.1:9" } }]\nusers: [{ name: u, user: {} }]\ncontexts: [{ name: x, context: { cluster: c, user: u } }]\ncurrent-context: x\n',
    );
    const restore = withEnv({ ...AWS_ENV, AWS_ENDPOINT_URL_SSM: ssm.url });
    try {
      const d = await wireChat('chatops', {
        ...AWS_ENV,
        AWS_ENDPOINT_URL_SSM: ssm.url,
        KUBECONFIG: kubeconfig,
        LOG_LEVEL: 'error',
        CHAT_SECRETS_PARAMETER: '/gpu-reflex/dev/chat-secrets',
        CHAT_FEISHU_APP_ID: 'cli_a',
      });
      expect(d.secrets).toEqual({ slackSigningSecret: 'from-parameter-store' });
      expect(d.feishu).toBeDefined();
      expect(ssm.requests.map((r) => r.body['Name'])).toEqual(['/gpu-reflex/dev/chat-secrets']);
    } finally {
      restore();
      ssm.server.close();
    }
  });
});
