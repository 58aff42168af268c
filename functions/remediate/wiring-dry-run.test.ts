/**
 * The dry-run choice reaches the cloud (issue #26: untested before): with DRY_RUN=true the wiring
 * wraps remediation's Alibaba Cloud port, so a reboot, a pool grow or a scale is recorded and never
 * sent; without it the same calls reach the (simulated) cloud — which is what shows the test can
 * see a write at all.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAliCloudSim, type AliCloudSim } from '../../infra/local/alicloud/index.ts';
import { startKubeSim, type KubeSim } from '../../infra/local/kube/index.ts';
import { resource } from '../../infra/local/kube/resources.ts';
import { REPO_ROOT } from '../../infra/local/stack-env.ts';
import { wireRemediation } from './wiring.ts';

let cloud: AliCloudSim;
let kube: KubeSim;
let env: Record<string, string>;
const POOL = 'np-t4-inference';

beforeAll(async () => {
  cloud = await startAliCloudSim({ cloud: join(REPO_ROOT, 'infra/local/alicloud/clouds/example.yaml') });
  kube = await startKubeSim({
    fleet: {
      namespaces: [{ name: 'gpu-reflex' }],
      nodes: [{ name: 'ack-t4', count: 1, allocatable: { 'nvidia.com/gpu': '1' } }],
    },
  });
  const kubeconfig = join(mkdtempSync(join(tmpdir(), 'dry-cloud-')), 'kubeconfig');
  kube.writeKubeconfig(kubeconfig);
  const c = cloud.connection;
  env = {
    KUBECONFIG: kubeconfig,
    LOG_LEVEL: 'error',
    REMEDIATION_REPAIR: 'alicloud',
    ALIBABA_CLOUD_REGION_ID: c.regionId,
    ACK_CLUSTER_ID: c.clusterId,
    ALIBABA_CLOUD_ACCESS_KEY_ID: c.accessKeyId,
    ALIBABA_CLOUD_ACCESS_KEY_SECRET: c.accessKeySecret,
    ALIBABA_CLOUD_ENDPOINT: c.endpoint,
    ALIBABA_CLOUD_PROTOCOL: 'http',
  };
  // The node is one of the pool's running instances, as ACK names it.
  const inst = [...cloud.cloud.instances.values()].find((i) => i.poolId === POOL && i.status === 'Running')!;
  const node = kube.store.list('nodes')[0]!.metadata.name;
  kube.cluster.patch(resource('nodes'), '', node, 'application/merge-patch+json', {
    spec: { providerID: `${c.regionId}.${inst.id}` },
  });
});
afterAll(async () => {
  await kube?.close();
  await cloud?.close();
});

const desired = () => cloud.cloud.pools.get(POOL)!.desired;

describe('remediation wiring: dry run reaches the cloud port', () => {
  it('with DRY_RUN=true, reboots, grows and scales nothing, and answers as if it had', async () => {
    const rebooting: string[] = [];
    const stop = cloud.cloud.onChange((ch) => void (ch.type === 'rebooting' && rebooting.push(ch.instance.id)));
    try {
      const deps = await wireRemediation('remediate', { ...env, DRY_RUN: 'true' });
      const node = kube.store.list('nodes')[0]!.metadata.name;
      const before = desired();
      await deps.cloud!.run({ kind: 'reboot', node } as never);
      await deps.cloud!.run({ kind: 'scale', pool: POOL, desired: before + 3 } as never);
      await deps.cloud!.run({ kind: 'replace', step: 'grow', pool: POOL, from: before, to: before + 1 } as never);
      expect(rebooting).toEqual([]);
      expect(desired()).toBe(before);

      // The same calls, wired for real, do reach it.
      const live = await wireRemediation('remediate', env);
      await live.cloud!.run({ kind: 'reboot', node } as never);
      await live.cloud!.run({ kind: 'scale', pool: POOL, desired: before + 3 } as never);
      expect(rebooting).toHaveLength(1);
      expect(desired()).toBe(before + 3);
    } finally {
      stop();
    }
  });
});
