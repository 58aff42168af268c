import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UsageError } from '../../events/cli-kit/command.ts';
import { describeFailure } from '../../bin/errors.ts';
import { parseLabelerConfig } from '../../functions/labels/core/config.ts';
import { planLabels } from '../../functions/labels/core/planner.ts';
import { inventory } from '../../functions/labels/testing.ts';
import { makeLocalCommand } from './cli.ts';
import { identifyCluster, labelNothingConfigText } from './cluster-identity.ts';
import { EXAMPLE_FLEET_PATH, startKubeSim, type KubeSim } from './kube/index.ts';
import { StackKube } from './stack-kube.ts';

/**
 * `gpu-reflex local --kubeconfig` and a cluster that is not the simulated one. The stand-in for a
 * user's cluster is a second simulator started without its marker: to the command it is exactly a
 * real API server, and its store shows whether anything was written.
 */
const work = mkdtempSync(join(tmpdir(), 'gpu-reflex-real-cluster-'));
let real: KubeSim;
let sim: KubeSim;
const realConfig = join(work, 'real.yaml');
const simConfig = join(work, 'sim.yaml');

beforeAll(async () => {
  real = await startKubeSim({ fleet: EXAMPLE_FLEET_PATH, marker: false });
  real.writeKubeconfig(realConfig);
  sim = await startKubeSim({});
  sim.writeKubeconfig(simConfig);
});
afterAll(async () => {
  await Promise.all([real.close(), sim.close()]);
  rmSync(work, { recursive: true, force: true });
});

/** Every object's kind/namespace/name → resourceVersion. */
function versions(s: KubeSim): Record<string, string> {
  const out: Record<string, string> = {};
  for (const r of ['nodes', 'pods', 'namespaces', 'configmaps', 'leases', 'resourcequotas', 'events'])
    for (const o of s.store.list(r))
      out[`${r}/${o.metadata.namespace ?? ''}/${o.metadata.name}`] = String(o.metadata.resourceVersion);
  return out;
}

describe('gpu-reflex local --kubeconfig on a cluster that is not the simulated one', () => {
  it('refuses without --write-to-real-cluster, naming the cluster and the read-only way, and writes nothing', async () => {
    const before = versions(real);
    const revision = real.store.resourceVersion;
    const lines: string[] = [];
    const io = { out: (l: string) => lines.push(l), err: (l: string) => lines.push(l) };
    const run = makeLocalCommand().run(['--kubeconfig', realConfig, '--duration', '5'], io);
    await expect(run).rejects.toThrow(UsageError);
    const err = (await run.catch((e: unknown) => e)) as Error;
    expect(err.message).toContain(`refusing to act on ${real.url}: it is not gpu-reflex's simulated cluster`);
    expect(err.message).toContain(`gpu-reflex remediate plan EVENT --kubeconfig ${realConfig}`);
    expect(err.message).toContain('--write-to-real-cluster');
    expect(describeFailure(err).exitCode).toBe(2);
    expect(real.store.resourceVersion).toBe(revision);
    expect(versions(real)).toEqual(before);
    expect(lines).toEqual([]);
  });

  it('says --write-to-real-cluster needs --kubeconfig', async () => {
    const io = { out: () => undefined, err: () => undefined };
    await expect(makeLocalCommand().run(['--write-to-real-cluster'], io)).rejects.toThrow(/goes with --kubeconfig/);
  });
});

describe('identifyCluster: simulated by identity, not by address', () => {
  it('knows the simulator by the marker it serves (its own id)', async () => {
    expect(await identifyCluster(simConfig)).toEqual({ simulated: true, server: sim.url, id: sim.marker!.id });
  });

  it('takes a cluster on 127.0.0.1 without the marker for a real one', async () => {
    const id = await identifyCluster(realConfig);
    expect(id).toMatchObject({ simulated: false, server: real.url });
    expect(id.simulated === false && id.why).toContain('HTTP 404');
  });

  it('takes a cluster it cannot ask for a real one (unknown is not safe)', async () => {
    const gone = await startKubeSim({});
    const path = join(work, 'gone.yaml');
    gone.writeKubeconfig(path);
    await gone.close();
    const id = await identifyCluster(path);
    expect(id.simulated === false && id.why).toMatch(/could not be asked \(ECONNREFUSED\)/);
  });
});

describe('what the stack does on a real cluster', () => {
  it('gives the node labeler a configuration that labels nothing from mock GPUs', () => {
    const config = parseLabelerConfig(labelNothingConfigText(), 'none.json');
    const plan = planLabels({ name: 'gpu-1', labels: {}, annotations: {}, allocatable: {} }, inventory(), config);
    expect(plan.kind).toBe('noop');
  });

  it("names the API server's cause when a pod cannot be created (not HTTP-Code: 404)", async () => {
    const empty = await startKubeSim({});
    const path = join(work, 'empty.yaml');
    empty.writeKubeconfig(path);
    try {
      const kube = new StackKube(path);
      const arrival = { name: 'train', namespace: 'research', count: 1, requests: { 'nvidia.com/gpu': 1 } };
      const err = await kube.createPods(arrival as Parameters<StackKube['createPods']>[0]).catch((e: unknown) => e);
      expect(describeFailure(err).message).toBe('creating pod research/train: namespaces "research" not found');
    } finally {
      await empty.close();
    }
  });
});
