import { afterEach, describe, expect, it } from 'vitest';
import { VirtualClock } from '../../../events/clock.ts';
import { startAliCloudSim } from '../../../infra/local/alicloud/index.ts';
import { withEnv } from '../../../infra/local/stack-env.ts';
import { manualClock } from '../clock.ts';
import { ConfigurationError, ForbiddenError } from '../errors.ts';
import { AWS_ENV, fakeSsm } from '../ssm-stand-in.ts';
import { ACCESS_KEY_PARAMETER_ENV, aliCloudSettingsWithSecret } from './access-key.ts';
import { AliCloudPools } from './client.ts';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const PARAMETER = '/gpu-reflex/prod/alicloud-access-key';

describe('the Alibaba Cloud AccessKey from Parameter Store', () => {
  it('signs with the AccessKey the SecureString holds, read once through the real SSM client', async () => {
    const sim = await startAliCloudSim({ clock: new VirtualClock(Date.parse('2026-01-01T00:00:00.000Z')) });
    cleanups.push(() => sim.close());
    const c = sim.connection;
    const ssm = await fakeSsm((name) => ({
      status: 200,
      body: {
        Parameter: {
          Name: name,
          Type: 'SecureString',
          Value: JSON.stringify({ accessKeyId: c.accessKeyId, accessKeySecret: c.accessKeySecret }),
          Version: 1,
        },
      },
    }));
    cleanups.push(() => ssm.server.close());
    cleanups.push(withEnv({ ...AWS_ENV, AWS_ENDPOINT_URL_SSM: ssm.url }));
    const env = {
      ALIBABA_CLOUD_REGION_ID: c.regionId,
      ACK_CLUSTER_ID: c.clusterId,
      ALIBABA_CLOUD_ENDPOINT: c.endpoint,
      ALIBABA_CLOUD_PROTOCOL: 'http',
      [ACCESS_KEY_PARAMETER_ENV]: PARAMETER,
    };
    const settings = await aliCloudSettingsWithSecret(env);
    expect(ssm.requests.map((r) => r.body)).toEqual([{ Name: PARAMETER, WithDecryption: true }]);
    // The simulator checks every ACS3 signature against its own key pair: a call that works was signed with it.
    expect(await new AliCloudPools(settings, manualClock(0)).listNodePools()).toEqual([]);
    await expect(
      new AliCloudPools({ ...settings, accessKeySecret: 'not-it' }, manualClock(0)).listNodePools(),
    ).rejects.toThrow(/SignatureDoesNotMatch/);
  });

  it('keeps an AccessKey in the environment, and reads nothing, where one is set', async () => {
    let reads = 0;
    const settings = await aliCloudSettingsWithSecret(
      {
        ALIBABA_CLOUD_REGION_ID: 'cn-hangzhou',
        ACK_CLUSTER_ID: 'c1',
        ALIBABA_CLOUD_ACCESS_KEY_ID: 'env-id',
        ALIBABA_CLOUD_ACCESS_KEY_SECRET: 'env-secret',
        [ACCESS_KEY_PARAMETER_ENV]: PARAMETER,
      },
      async () => (reads++, '{}'),
    );
    expect(settings).toMatchObject({ accessKeyId: 'env-id', accessKeySecret: 'env-secret' });
    expect(reads).toBe(0);
  });

  it.each([
    [
      'not JSON',
      'id:secret',
      `${ACCESS_KEY_PARAMETER_ENV} (ssm:${PARAMETER}) is not JSON: expected {"accessKeyId": "...", "accessKeySecret": "..."}`,
    ],
    [
      'missing the secret',
      '{"accessKeyId":"LTAI-1","secret":"s3cr3t"}',
      `${ACCESS_KEY_PARAMETER_ENV} (ssm:${PARAMETER}) must hold {"accessKeyId": "...", "accessKeySecret": "..."} (strings; has accessKeyId, secret)`,
    ],
  ])('names what is wrong with the parameter, never its value: %s', async (_what, value, message) => {
    const err = await aliCloudSettingsWithSecret(
      { ALIBABA_CLOUD_REGION_ID: 'cn-hangzhou', ACK_CLUSTER_ID: 'c1', [ACCESS_KEY_PARAMETER_ENV]: PARAMETER },
      async () => value,
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigurationError);
    expect((err as Error).message).toBe(message);
    expect((err as Error).message).not.toContain('s3cr3t');
  });

  it('says which permission a denied read needs', async () => {
    const ssm = await fakeSsm(() => ({
      status: 400,
      body: { __type: 'AccessDeniedException', Message: 'not authorized' },
    }));
    cleanups.push(() => ssm.server.close());
    cleanups.push(withEnv({ ...AWS_ENV, AWS_ENDPOINT_URL_SSM: ssm.url }));
    const err = await aliCloudSettingsWithSecret({
      ALIBABA_CLOUD_REGION_ID: 'cn-hangzhou',
      ACK_CLUSTER_ID: 'c1',
      [ACCESS_KEY_PARAMETER_ENV]: PARAMETER,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ForbiddenError);
    expect((err as Error).message).toBe(
      `Alibaba Cloud AccessKey ssm:${PARAMETER}: denied — the function's role needs ssm:GetParameter on it (and kms:Decrypt on its key)`,
    );
  });
});
