import { afterEach, describe, expect, it } from 'vitest';
import { VirtualClock } from '../../../events/clock.ts';
import { startAliCloudSim, type AliCloudSim } from '../../../infra/local/alicloud/index.ts';
import { EXAMPLE_FLEET_PATH, startKubeSim, type KubeSim } from '../../../infra/local/kube/index.ts';
import { withEnv } from '../../../infra/local/stack-env.ts';
import { lazy, wireFromEnv } from '../../lib/wiring.ts';
import { injectClock } from '../clock.ts';
import { ConfigurationError, ForbiddenError, isRetryable, NotFoundError, TransientError } from '../errors.ts';
import { ACK_KUBECONFIG_ACTION, AckKubeconfigSource } from './ack.ts';
import { renewAt } from './source.ts';
import { SsmKubeconfigSource } from './ssm.ts';
import { AWS_ENV, fakeSsm } from '../ssm-stand-in.ts';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  injectClock(undefined);
});

async function ssmWith(answer: Parameters<typeof fakeSsm>[0]) {
  const ssm = await fakeSsm(answer);
  cleanups.push(() => ssm.server.close());
  cleanups.push(withEnv({ ...AWS_ENV, AWS_ENDPOINT_URL_SSM: ssm.url }));
  return ssm;
}

async function kubeSim(): Promise<KubeSim> {
  const sim = await startKubeSim({ fleet: EXAMPLE_FLEET_PATH });
  cleanups.push(() => sim.close());
  return sim;
}

async function aliSim(clock: VirtualClock): Promise<AliCloudSim> {
  const sim = await startAliCloudSim({ clock });
  cleanups.push(() => sim.close());
  return sim;
}

describe('Parameter Store (SecureString) through the AWS SDK', () => {
  it('reads the parameter decrypted, by the name it was given', async () => {
    const ssm = await ssmWith((name) => ({
      status: 200,
      body: { Parameter: { Name: name, Type: 'SecureString', Value: 'apiVersion: v1\n', Version: 3 } },
    }));
    await expect(new SsmKubeconfigSource('/gpu-reflex/prod/kubeconfig').fetch()).resolves.toEqual({
      text: 'apiVersion: v1\n',
    });
    expect(ssm.requests).toHaveLength(1);
    expect(ssm.requests[0]!.headers['x-amz-target']).toBe('AmazonSSM.GetParameter');
    expect(ssm.requests[0]!.body).toEqual({ Name: '/gpu-reflex/prod/kubeconfig', WithDecryption: true });
  });

  it.each([
    ['a missing parameter', { __type: 'ParameterNotFound', message: 'x' }, NotFoundError, 'no such parameter'],
    [
      'a role without ssm:GetParameter',
      { __type: 'AccessDeniedException', Message: 'not authorized' },
      ForbiddenError,
      "the function's role needs ssm:GetParameter",
    ],
    ['a key the role may not use', { __type: 'InvalidKeyId', message: 'x' }, ForbiddenError, 'kms:Decrypt'],
  ])('names the parameter and what to grant on %s, never a value', async (_what, body, errorClass, text) => {
    await ssmWith(() => ({ status: 400, body }));
    const err = await new SsmKubeconfigSource('/gpu-reflex/prod/kubeconfig').fetch().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(errorClass);
    expect((err as Error).message).toContain('ssm:/gpu-reflex/prod/kubeconfig');
    expect((err as Error).message).toContain(text);
  });

  it('refuses a plain String parameter: a kubeconfig is kept encrypted', async () => {
    await ssmWith((name) => ({
      status: 200,
      body: { Parameter: { Name: name, Type: 'String', Value: 'apiVersion: v1\n' } },
    }));
    await expect(new SsmKubeconfigSource('/k').fetch()).rejects.toThrow(ConfigurationError);
  });
});

describe("ACK's DescribeClusterUserKubeconfig (real @alicloud/openapi-client against the simulator, ACS3-signed)", () => {
  it('asks for a temporary kubeconfig of the endpoint configured, and returns its expiry', async () => {
    const clock = new VirtualClock(Date.UTC(2026, 0, 1));
    const sim = await aliSim(clock);
    sim.cloud.userKubeconfigs.public = 'public-config';
    sim.cloud.userKubeconfigs.private = 'private-config';
    const c = sim.connection;
    const settings = {
      regionId: c.regionId,
      clusterId: c.clusterId,
      accessKeyId: c.accessKeyId,
      accessKeySecret: c.accessKeySecret,
      endpoint: c.endpoint,
      protocol: 'http' as const,
    };
    const now = () => clock.now();
    await expect(new AckKubeconfigSource(settings, { endpoint: 'private', minutes: 90, now }).fetch()).resolves.toEqual(
      { text: 'private-config', expiresAt: Date.UTC(2026, 0, 1, 1, 30) },
    );
    await expect(new AckKubeconfigSource(settings, { endpoint: 'public', minutes: 15, now }).fetch()).resolves.toEqual({
      text: 'public-config',
      expiresAt: Date.UTC(2026, 0, 1, 0, 15),
    });
    expect(sim.cloud.calls.map((x) => x.action)).toEqual([
      'DescribeClusterUserKubeconfig',
      'DescribeClusterUserKubeconfig',
    ]);
    const wrong = await new AckKubeconfigSource(
      { ...settings, clusterId: 'c-other' },
      { endpoint: 'public', minutes: 15, now },
    )
      .fetch()
      .catch((e: unknown) => e);
    expect(wrong).toBeInstanceOf(NotFoundError);
    expect((wrong as Error).message).toContain(ACK_KUBECONFIG_ACTION);
  });
});

describe("ACK's kubeconfig with the AccessKey from Parameter Store (functions on Lambda)", () => {
  it('signs DescribeClusterUserKubeconfig with the key the SecureString holds, read through the real SSM client', async () => {
    const clock = new VirtualClock(Date.UTC(2026, 0, 1));
    const sim = await aliSim(clock);
    sim.cloud.userKubeconfigs.public = 'public-config';
    const c = sim.connection;
    const ssm = await ssmWith((name) => ({
      status: 200,
      body: {
        Parameter: {
          Name: name,
          Type: 'SecureString',
          Value: JSON.stringify({ accessKeyId: c.accessKeyId, accessKeySecret: c.accessKeySecret }),
        },
      },
    }));
    const env = {
      ALIBABA_CLOUD_REGION_ID: c.regionId,
      ACK_CLUSTER_ID: c.clusterId,
      ALIBABA_CLOUD_ENDPOINT: c.endpoint,
      ALIBABA_CLOUD_PROTOCOL: 'http',
      ALIBABA_CLOUD_ACCESS_KEY_PARAMETER: '/gpu-reflex/prod/alicloud-access-key',
    };
    const source = await AckKubeconfigSource.fromEnv(env, { endpoint: 'public', minutes: 15, now: () => clock.now() });
    await expect(source.fetch()).resolves.toEqual({ text: 'public-config', expiresAt: Date.UTC(2026, 0, 1, 0, 15) });
    expect(ssm.requests.map((r) => r.body)).toEqual([
      { Name: '/gpu-reflex/prod/alicloud-access-key', WithDecryption: true },
    ]);
    // The simulator verifies each signature against its key pair: another secret is refused.
    const other = await AckKubeconfigSource.fromEnv(
      env,
      { endpoint: 'public', minutes: 15, now: () => clock.now() },
      async () => JSON.stringify({ accessKeyId: c.accessKeyId, accessKeySecret: 'not-it' }),
    );
    await expect(other.fetch()).rejects.toThrow(/SignatureDoesNotMatch/);
  });
});

describe('renewing before expiry', () => {
  it.each([
    [0, 60 * 60_000, 48 * 60_000],
    [1_000, 1_000 + 3 * 24 * 3600_000, 1_000 + Math.floor(0.8 * 3 * 24 * 3600_000)],
    [5_000, 4_000, 5_000],
    [0, undefined, undefined],
  ])('fetched at %d, expiring at %s: renewed at %s', (fetched, expires, at) => {
    expect(renewAt(fetched, expires)).toBe(at);
  });
});

describe('the wiring reaches the cluster with a fetched kubeconfig', () => {
  it('from Parameter Store, once per container', async () => {
    const kube = await kubeSim();
    const ssm = await ssmWith((name) => ({
      status: 200,
      body: { Parameter: { Name: name, Type: 'SecureString', Value: kube.kubeconfig() } },
    }));
    const get = lazy(() =>
      wireFromEnv('test', undefined, {
        GPU_REFLEX_KUBECONFIG_PARAMETER: '/gpu-reflex/dev/kubeconfig',
        LOG_LEVEL: 'error',
      }),
    );
    const deps = await get();
    expect((await deps.kube.nodes.get('a100-train-0')).name).toBe('a100-train-0');
    expect(deps.renewAt).toBeUndefined();
    expect(await get()).toBe(deps);
    expect(ssm.requests).toHaveLength(1);
  });

  it('from Parameter Store, fetched again after the API server refuses it (401), the refused call retried', async () => {
    const kube = await kubeSim();
    const ssm = await ssmWith((name) => ({
      status: 200,
      body: { Parameter: { Name: name, Type: 'SecureString', Value: kube.kubeconfig() } },
    }));
    const get = lazy(() =>
      wireFromEnv('test', undefined, {
        GPU_REFLEX_KUBECONFIG_PARAMETER: '/gpu-reflex/dev/kubeconfig',
        LOG_LEVEL: 'error',
      }),
    );
    const first = await get();
    // The token was rotated under us: the API server answers 401 (a real Status, through client-node).
    kube.faults.inject({ code: 401, reason: 'Unauthorized', message: 'Unauthorized', path: '/api/v1/nodes/' });
    const err = await first.kube.nodes.get('a100-train-0').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TransientError);
    expect(isRetryable(err)).toBe(true);
    expect((err as TransientError).status).toBe(401);
    // The next invocation wires again, with the kubeconfig fetched again, and reaches the cluster.
    const second = await get();
    expect(second).not.toBe(first);
    expect(ssm.requests).toHaveLength(2);
    expect((await second.kube.nodes.get('a100-train-0')).name).toBe('a100-train-0');
    expect(await get()).toBe(second);
    // Other refusals are not about credentials: a 403 stays a ForbiddenError and keeps the wiring.
    kube.faults.inject({ code: 403, path: '/api/v1/nodes/' });
    await expect(second.kube.nodes.get('a100-train-0')).rejects.toBeInstanceOf(ForbiddenError);
    expect(await get()).toBe(second);
  });

  it("from ACK, wired again once 80% of the temporary kubeconfig's life has passed", async () => {
    const clock = new VirtualClock(Date.UTC(2026, 0, 1));
    injectClock(clock);
    const kube = await kubeSim();
    const ali = await aliSim(clock);
    ali.cloud.userKubeconfigs.public = kube.kubeconfig();
    const c = ali.connection;
    const env = {
      GPU_REFLEX_KUBECONFIG_ACK: 'public',
      GPU_REFLEX_KUBECONFIG_ACK_MINUTES: '60',
      ALIBABA_CLOUD_REGION_ID: c.regionId,
      ACK_CLUSTER_ID: c.clusterId,
      ALIBABA_CLOUD_ACCESS_KEY_ID: c.accessKeyId,
      ALIBABA_CLOUD_ACCESS_KEY_SECRET: c.accessKeySecret,
      ALIBABA_CLOUD_ENDPOINT: c.endpoint,
      ALIBABA_CLOUD_PROTOCOL: 'http',
      LOG_LEVEL: 'error',
    };
    cleanups.push(withEnv(AWS_ENV));
    const get = lazy(() => wireFromEnv('test', undefined, env));
    const first = await get();
    expect((await first.kube.nodes.get('a100-train-0')).name).toBe('a100-train-0');
    expect(first.renewAt).toBe(Date.UTC(2026, 0, 1, 0, 48));
    clock.advance(48 * 60_000 - 1);
    expect(await get()).toBe(first);
    clock.advance(1);
    const second = await get();
    expect(second).not.toBe(first);
    expect(second.renewAt).toBe(Date.UTC(2026, 0, 1, 1, 36));
    expect((await second.kube.nodes.get('a100-train-0')).name).toBe('a100-train-0');
    expect(ali.cloud.calls.map((x) => x.action)).toEqual([
      'DescribeClusterUserKubeconfig',
      'DescribeClusterUserKubeconfig',
    ]);
  });
});
