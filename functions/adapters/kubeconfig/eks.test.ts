/**
 * The EKS token is the AWS CLI's, byte for byte: against vectors recorded from awscli's own
 * TokenGenerator (test/fixtures/eks-token/awscli.json), and against awscli itself where a Python
 * here has it. The kubeconfig carries it as client-node reads it, and the wiring reaches a cluster
 * with it as its bearer token, renewed before EKS stops taking it.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { VirtualClock } from '../../../events/clock.ts';
import { EXAMPLE_FLEET_PATH, startKubeSim } from '../../../infra/local/kube/index.ts';
import { pythonWith, requireTool } from '../../../test/tools.ts';
import { lazy, wireFromEnv } from '../../lib/wiring.ts';
import { loadFunctionsConfig } from '../../config.ts';
import { injectClock } from '../clock.ts';
import { ConfigurationError } from '../errors.ts';
import {
  credentialsFromEnv,
  EKS_TOKEN_PREFIX,
  eksKubeconfig,
  EksKubeconfigSource,
  eksToken,
  type AwsCredentials,
} from './eks.ts';

const KEY = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' };
const at = (amz: string) =>
  Date.parse(
    `${amz.slice(0, 4)}-${amz.slice(4, 6)}-${amz.slice(6, 8)}T${amz.slice(9, 11)}:${amz.slice(11, 13)}:${amz.slice(13, 15)}Z`,
  );
const recorded = JSON.parse(
  readFileSync(new URL('../../../test/fixtures/eks-token/awscli.json', import.meta.url), 'utf8'),
) as { cases: { cluster: string; region: string; at: string; sessionToken?: string; token: string }[] };
const SCRIPT = new URL('../../../test/contract/clients/eks_token.py', import.meta.url).pathname;
const python = pythonWith('awscli.customizations.eks.get_token');
const awscli = requireTool('awscli (python)', () => python !== undefined);

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  injectClock(undefined);
});

describe('the EKS token', () => {
  it.each(
    recorded.cases.map(
      (c) => [`${c.cluster} in ${c.region}${c.sessionToken ? ', with a session token' : ''}`, c] as const,
    ),
  )('is the one awscli recorded: %s', (_what, c) => {
    expect(
      eksToken(c.cluster, c.region, { ...KEY, ...(c.sessionToken ? { sessionToken: c.sessionToken } : {}) }, at(c.at)),
    ).toBe(c.token);
  });

  it(
    'is the one awscli makes for any cluster, region, second and session token (fast-check, 6 runs)',
    awscli.options,
    () => {
      fc.assert(
        fc.property(
          fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9_-]{0,30}$/),
          fc.constantFrom('us-east-1', 'eu-west-1', 'ap-southeast-1', 'cn-northwest-1', 'us-gov-west-1'),
          fc.integer({ min: Date.UTC(2020, 0, 1) / 1000, max: Date.UTC(2035, 0, 1) / 1000 }),
          fc.option(fc.stringMatching(/^[A-Za-z0-9+/=]{8,40}$/), { nil: undefined }),
          (cluster, region, seconds, sessionToken) => {
            const amz = new Date(seconds * 1000).toISOString().replace(/[-:]/g, '').replace('.000', '');
            const theirs = JSON.parse(
              execFileSync(python!, [SCRIPT, cluster, region, amz, ...(sessionToken ? [sessionToken] : [])], {
                encoding: 'utf8',
              }),
            ) as { token: string };
            expect(
              eksToken(cluster, region, { ...KEY, ...(sessionToken ? { sessionToken } : {}) }, seconds * 1000),
            ).toBe(theirs.token);
          },
        ),
        { numRuns: 6 },
      );
    },
  );

  it('changes with every input that is signed', () => {
    const base = eksToken('c', 'us-east-1', KEY, Date.UTC(2026, 0, 1));
    expect(base.startsWith(EKS_TOKEN_PREFIX)).toBe(true);
    expect(eksToken('d', 'us-east-1', KEY, Date.UTC(2026, 0, 1))).not.toBe(base);
    expect(eksToken('c', 'us-east-1', { ...KEY, secretAccessKey: 'other' }, Date.UTC(2026, 0, 1))).not.toBe(base);
    expect(eksToken('c', 'us-east-1', KEY, Date.UTC(2026, 0, 1, 0, 0, 1))).not.toBe(base);
  });
});

describe('the EKS kubeconfig', () => {
  it('is read by client-node as the cluster, its CA and the token as bearer', () => {
    const kc = new KubeConfig();
    kc.loadFromString(
      eksKubeconfig(
        {
          name: 'gpu-prod',
          region: 'us-east-1',
          endpoint: 'https://ABC.gr7.us-east-1.eks.amazonaws.com',
          caData: 'LS0tLS1CRUdJTg==',
        },
        'k8s-aws-v1.abc',
      ),
    );
    expect(kc.getCurrentCluster()).toMatchObject({
      name: 'gpu-prod',
      server: 'https://ABC.gr7.us-east-1.eks.amazonaws.com',
      caData: 'LS0tLS1CRUdJTg==',
    });
    expect(kc.getCurrentUser()?.token).toBe('k8s-aws-v1.abc');
  });

  it('lasts 14 minutes, signed with the credentials of the moment', async () => {
    let creds: AwsCredentials = KEY;
    const source = new EksKubeconfigSource(
      { name: 'gpu-prod', region: 'us-east-1', endpoint: 'https://x', caData: 'Q0E=' },
      () => creds,
      () => Date.UTC(2026, 0, 1),
    );
    const first = await source.fetch();
    expect(first.expiresAt).toBe(Date.UTC(2026, 0, 1, 0, 14));
    creds = { ...KEY, sessionToken: 'rotated' };
    expect((await source.fetch()).text).not.toBe(first.text);
    expect(source.name).toBe('eks:gpu-prod (us-east-1)');
  });

  it('names what is missing: credentials, endpoint and CA', () => {
    expect(() => credentialsFromEnv({})).toThrow(ConfigurationError);
    expect(() => loadFunctionsConfig({ GPU_REFLEX_KUBECONFIG_EKS: 'gpu-prod' })).toThrow(
      "GPU_REFLEX_KUBECONFIG_EKS needs GPU_REFLEX_EKS_ENDPOINT and GPU_REFLEX_EKS_CA_DATA (aws eks describe-cluster --name gpu-prod --query 'cluster.[endpoint,certificateAuthority.data]')",
    );
    expect(() =>
      loadFunctionsConfig({
        GPU_REFLEX_KUBECONFIG_EKS: 'gpu-prod',
        GPU_REFLEX_EKS_ENDPOINT: 'https://x',
        GPU_REFLEX_EKS_CA_DATA: 'Q0E=',
        GPU_REFLEX_IN_CLUSTER: 'true',
      }),
    ).toThrow(/set exactly one of/);
  });
});

describe('the wiring with an EKS cluster', () => {
  it('sends the token as its bearer to the API server, and makes a new one before EKS stops taking it', async () => {
    const clock = new VirtualClock(Date.UTC(2026, 0, 1));
    injectClock(clock);
    const sim = await startKubeSim({ fleet: EXAMPLE_FLEET_PATH });
    cleanups.push(() => sim.close());
    // In front of the cluster, over TLS with its own CA (a stand-in key pair, test/fixtures/eks-token):
    // what an EKS API server would be given to authenticate.
    const simKc = new KubeConfig();
    simKc.loadFromString(sim.kubeconfig());
    const target = new URL(simKc.getCurrentCluster()!.server);
    const cert = readFileSync(new URL('../../../test/fixtures/eks-token/stand-in.cert.pem', import.meta.url));
    const bearers: string[] = [];
    const proxy = createHttpsServer(
      { cert, key: readFileSync(new URL('../../../test/fixtures/eks-token/stand-in.key.pem', import.meta.url)) },
      (req, res) => {
        bearers.push(String(req.headers.authorization ?? ''));
        const up = request(
          { host: target.hostname, port: target.port, path: req.url, method: req.method, headers: req.headers },
          (r) => {
            res.writeHead(r.statusCode ?? 502, r.headers);
            r.pipe(res);
          },
        );
        req.pipe(up);
      },
    );
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    cleanups.push(() => new Promise((r) => proxy.close(r)));
    const env = {
      GPU_REFLEX_KUBECONFIG_EKS: 'gpu-prod',
      GPU_REFLEX_EKS_ENDPOINT: `https://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
      GPU_REFLEX_EKS_CA_DATA: cert.toString('base64'),
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: KEY.accessKeyId,
      AWS_SECRET_ACCESS_KEY: KEY.secretAccessKey,
      LOG_LEVEL: 'error',
    };
    const get = lazy(() => wireFromEnv('test', undefined, env));
    const first = await get();
    expect((await first.kube.nodes.get('a100-train-0')).name).toBe('a100-train-0');
    expect(bearers.at(-1)).toBe(`Bearer ${eksToken('gpu-prod', 'us-east-1', KEY, Date.UTC(2026, 0, 1))}`);
    expect(first.renewAt).toBe(Date.UTC(2026, 0, 1) + Math.floor(14 * 60_000 * 0.8));
    clock.advance(Math.floor(14 * 60_000 * 0.8));
    const second = await get();
    expect(second).not.toBe(first);
    await second.kube.nodes.get('a100-train-0');
    expect(bearers.at(-1)).toBe(`Bearer ${eksToken('gpu-prod', 'us-east-1', KEY, clock.now())}`);
  });
});
