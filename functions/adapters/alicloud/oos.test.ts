/**
 * Parameters and secrets on the Alibaba target (issue #35): every `*_PARAMETER` the functions read
 * takes `oos:<name>` / `oos-secret:<name>` (alicloud/oos.ts through adapters/ssm.ts), read with
 * ACS3-signed calls that the simulated OOS (infra/local/alicloud/oos.ts) checks; the consumers
 * (chat's secrets, the policies, the kubeconfig variable) see the same values they would from SSM.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { startOosSim, type OosSim } from '../../../infra/local/alicloud/oos.ts';
import { chatSecretsFromEnv } from '../../chatops/secrets.ts';
import { loadFunctionsConfig } from '../../config.ts';
import { ConfigurationError, ForbiddenError, NotFoundError } from '../errors.ts';
import { readParameter, readSecureString } from '../ssm.ts';

const KEY = { id: 'LTAI5tOosTest', secret: 'oos-test-secret' };
let oos: OosSim | undefined;
afterEach(async () => {
  vi.unstubAllEnvs();
  await oos?.close();
  oos = undefined;
});

async function start(allowed?: string[]) {
  oos = await startOosSim({
    accessKeys: { [KEY.id]: KEY.secret },
    parameters: {
      'gpu-reflex-prod-remediation-policy': { value: 'dryRun: true\n' },
      'gpu-reflex-prod-chat-secrets': { value: '{"slackSigningSecret":"s3cret"}', secret: true },
    },
    ...(allowed ? { allowed: { [KEY.id]: allowed } } : {}),
  });
  vi.stubEnv('ALIBABA_CLOUD_REGION_ID', 'cn-hangzhou');
  vi.stubEnv('ALIBABA_CLOUD_OOS_ENDPOINT', oos.endpoint);
  vi.stubEnv('ALIBABA_CLOUD_PROTOCOL', 'http');
  vi.stubEnv('ALIBABA_CLOUD_ACCESS_KEY_ID', KEY.id);
  vi.stubEnv('ALIBABA_CLOUD_ACCESS_KEY_SECRET', KEY.secret);
  return oos;
}

describe('OOS parameters behind every *_PARAMETER', () => {
  it('reads a policy from a common parameter, and a missing one as "use the defaults"', async () => {
    const sim = await start();
    expect(await readParameter('oos:gpu-reflex-prod-remediation-policy', 'remediation policy')).toBe('dryRun: true\n');
    expect(await readParameter('oos:gpu-reflex-prod-mig-policy', 'MIG policy')).toBeUndefined();
    expect(sim.calls).toEqual([
      'GetParameter gpu-reflex-prod-remediation-policy',
      'GetParameter gpu-reflex-prod-mig-policy',
    ]);
  });

  it("reads chat's secrets from an encrypted parameter, decrypted", async () => {
    const sim = await start();
    vi.stubEnv('CHAT_SECRETS_PARAMETER', 'oos-secret:gpu-reflex-prod-chat-secrets');
    expect(await chatSecretsFromEnv(process.env)).toEqual({ slackSigningSecret: 's3cret' });
    expect(sim.calls).toEqual(['GetSecretParameter gpu-reflex-prod-chat-secrets']);
  });

  it('refuses a secret kept unencrypted, names a missing secret, and a denied read with its RAM actions', async () => {
    await start(['gpu-reflex-prod-remediation-policy']);
    await expect(readSecureString('oos:gpu-reflex-prod-remediation-policy', 'chat secrets')).rejects.toThrow(
      /a secret belongs in an encrypted OOS parameter \(oos-secret:<name>\)/,
    );
    const denied = readSecureString('oos-secret:gpu-reflex-prod-chat-secrets', 'chat secrets');
    await expect(denied).rejects.toThrow(ForbiddenError);
    await expect(denied).rejects.toThrow(/oos:GetSecretParameter \(and kms:GetSecretValue\)/);
    await oos!.close();
    await start();
    await expect(readSecureString('oos-secret:nope', 'kubeconfig')).rejects.toThrow(NotFoundError);
  });

  it("checks OOS's name rule before any call", async () => {
    const sim = await start();
    await expect(readParameter('oos:ALIYUN-reserved', 'x')).rejects.toThrow(ConfigurationError);
    await expect(readParameter('oos:has/slash', 'x')).rejects.toThrow(/letters, digits, - and _/);
    expect(sim.calls).toEqual([]);
  });

  it('a forged key is refused by the simulated gateway (the check can fail)', async () => {
    await start();
    vi.stubEnv('ALIBABA_CLOUD_ACCESS_KEY_SECRET', 'not-the-secret');
    await expect(readParameter('oos:gpu-reflex-prod-remediation-policy', 'remediation policy')).rejects.toThrow(
      /SignatureDoesNotMatch/,
    );
  });

  it('takes oos-secret:<name> for the kubeconfig parameter', () => {
    expect(
      loadFunctionsConfig({ GPU_REFLEX_KUBECONFIG_PARAMETER: 'oos-secret:gpu-reflex-prod-kubeconfig' }),
    ).toMatchObject({
      GPU_REFLEX_KUBECONFIG_PARAMETER: 'oos-secret:gpu-reflex-prod-kubeconfig',
    });
  });
});
