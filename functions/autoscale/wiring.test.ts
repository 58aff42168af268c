import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Context } from 'aws-lambda';
import { createAutoscaleHandler } from './handler.ts';
import { autoscalePolicyFromEnv } from '../lib/pool-policy.ts';
import { wireAutoscale } from './wiring.ts';

const dir = mkdtempSync(join(tmpdir(), 'autoscale-wiring-'));
const file = (name: string, text: string) => {
  writeFileSync(join(dir, name), text);
  return join(dir, name);
};
// A kubeconfig that loads; nothing listens there, and nothing here calls it.
const KUBECONFIG = file(
  'kubeconfig',
  'apiVersion: v1\nkind: Config\nclusters: [{ name: c, cluster: { server: "http://127.0.0.1:9" } }]\nusers: [{ name: u, user: {} }]\ncontexts: [{ name: x, context: { cluster: c, user: u } }]\ncurrent-context: x\n',
);

describe('autoscale-pools wiring', () => {
  it('reads the policy file, naming the file and the field of a mistake', () => {
    expect(autoscalePolicyFromEnv({}).pools).toEqual({});
    expect(
      autoscalePolicyFromEnv({ AUTOSCALE_POLICY_FILE: file('ok.yaml', 'pools:\n  np-t4: { max: 3 }\n') }).pools,
    ).toEqual({ 'np-t4': { min: 0, max: 3, maxStep: 10 } });
    expect(() =>
      autoscalePolicyFromEnv({ AUTOSCALE_POLICY_FILE: file('bad.yaml', 'pools:\n  np-t4: { max: 0 }\n') }),
    ).toThrow(/bad\.yaml is invalid:\n {2}pools\.np-t4\.max: /);
    expect(() => autoscalePolicyFromEnv({ AUTOSCALE_POLICY_FILE: join(dir, 'missing.yaml') })).toThrow(
      /AUTOSCALE_POLICY_FILE \S+missing\.yaml: ENOENT/,
    );
  });

  it('needs no Alibaba Cloud settings while no pool is managed, and says so when run', async () => {
    const deps = await wireAutoscale('autoscale-pools', { KUBECONFIG, LOG_LEVEL: 'error' });
    await expect(deps.cloud.listNodePools()).rejects.toThrow(/no node pool is managed/);
    const handler = createAutoscaleHandler(() => deps);
    expect(await handler({}, { awsRequestId: 'r1' } as Context)).toEqual({
      status: 'done',
      result: { managedPools: 0 },
    });
  });

  it('names the missing cloud variable once a pool is managed', async () => {
    const AUTOSCALE_POLICY_FILE = file('one.yaml', 'pools:\n  np-t4: { max: 3 }\n');
    await expect(
      wireAutoscale('autoscale-pools', { KUBECONFIG, AUTOSCALE_POLICY_FILE, LOG_LEVEL: 'error' }),
    ).rejects.toThrow('ALIBABA_CLOUD_REGION_ID is not set (needed to reach Alibaba Cloud)');
    const deps = await wireAutoscale('autoscale-pools', {
      KUBECONFIG,
      AUTOSCALE_POLICY_FILE,
      LOG_LEVEL: 'error',
      ALIBABA_CLOUD_REGION_ID: 'cn-hangzhou',
      ACK_CLUSTER_ID: 'c1',
      ALIBABA_CLOUD_ACCESS_KEY_ID: 'k',
      ALIBABA_CLOUD_ACCESS_KEY_SECRET: 's',
    });
    expect(deps.clusterId).toBe('c1');
  });
});
