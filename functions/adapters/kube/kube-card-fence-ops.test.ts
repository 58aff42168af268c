/**
 * The gpushare card fence through the real adapter (@kubernetes/client-node's CoreV1Api) against
 * the simulated cluster: it merges into ConfigMap kube-system/unhealthy-gpu-<node>, never rewrites
 * another writer's entries or keys, and never writes what the extender would misread.
 */
import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKubeSim } from '../../../infra/local/kube/index.ts';
import { loadKubeConfig } from './config.ts';
import { KubeCardFenceOps } from './kube-card-fence-ops.ts';

let sim: Awaited<ReturnType<typeof startKubeSim>>;
let core: CoreV1Api;
beforeAll(async () => {
  sim = await startKubeSim({});
  core = loadKubeConfig({ kubeconfigText: sim.kubeconfig() }).makeApiClient(CoreV1Api);
});
afterAll(() => sim.close());

const data = async (node: string) =>
  (await core.readNamespacedConfigMap({ namespace: 'kube-system', name: `unhealthy-gpu-${node}` })).data;

describe('KubeCardFenceOps', () => {
  it('creates the ConfigMap with our card when there is none, and a second change is no change', async () => {
    const ops = new KubeCardFenceOps(core);
    expect(await ops.listed('n1')).toEqual([]);
    expect(await ops.change('n1', [1], [])).toBe(true);
    expect(await data('n1')).toEqual({ gpus: '1' });
    expect(await ops.change('n1', [1], [])).toBe(false);
    expect(await ops.listed('n1')).toEqual([1]);
  });

  it("adds and removes only the given cards, keeping another writer's entries, order and keys", async () => {
    await core.createNamespacedConfigMap({
      namespace: 'kube-system',
      body: { metadata: { name: 'unhealthy-gpu-n2' }, data: { gpus: '3,0', note: 'isolated by a person' } },
    });
    const ops = new KubeCardFenceOps(core);
    expect(await ops.change('n2', [1], [])).toBe(true);
    expect(await data('n2')).toEqual({ gpus: '3,0,1', note: 'isolated by a person' });
    expect(await ops.change('n2', [], [1])).toBe(true);
    expect(await data('n2')).toEqual({ gpus: '3,0', note: 'isolated by a person' });
    expect(await ops.listed('n2')).toEqual([3, 0]);
  });

  it('drops the key rather than write an empty list (the extender reads "" as card 0)', async () => {
    const ops = new KubeCardFenceOps(core);
    await ops.change('n3', [2], []);
    expect(await ops.change('n3', [], [2])).toBe(true);
    expect(await data('n3')).not.toHaveProperty('gpus');
    expect(await ops.listed('n3')).toEqual([]);
  });
});
