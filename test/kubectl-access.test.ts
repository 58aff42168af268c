import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKubeSim, type KubeSim } from '../infra/local/kube/index.ts';
import { commandWorks, requireTool } from './tools.ts';

/**
 * The simulated cluster as kubectl sees a real one of a given release: the repository's own
 * manifests applied with `kubectl apply -k infra/k8s`, then `kubectl auth can-i` answered from their
 * RBAC, `--as` requests refused as the real server refuses them, `kubectl version` and
 * `api-resources` saying the release, and `kubectl explain` reading the served OpenAPI.
 */
const kubectlTool = requireTool('kubectl', () => commandWorks('kubectl', ['version', '--client']));
const ROOT = resolve(import.meta.dirname, '..');
const FUNCTIONS = 'system:serviceaccount:gpu-reflex:gpu-reflex-functions';

describe('kubectl: release, RBAC and OpenAPI of the simulated cluster', kubectlTool.options, () => {
  let sim: KubeSim;
  let dir: string;
  let kubeconfig: string;
  beforeAll(async () => {
    sim = await startKubeSim({
      fleet: {
        nodes: [{ name: 'gpu-a', allocatable: { cpu: '32', memory: '128Gi', 'nvidia.com/gpu': 4 } }],
        namespaces: [{ name: 'serve' }, { name: 'gpu-operator' }],
      },
      apis: { kubernetesVersion: '1.36' },
    });
    dir = mkdtempSync(join(tmpdir(), 'kube-sim-access-'));
    kubeconfig = join(dir, 'config');
    sim.writeKubeconfig(kubeconfig);
  });
  afterAll(async () => {
    await sim.close();
    rmSync(dir, { recursive: true, force: true });
  });

  function kubectl(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    return new Promise((done) => {
      execFile(
        'kubectl',
        ['--kubeconfig', kubeconfig, '--cache-dir', join(dir, 'cache'), ...args],
        { cwd: ROOT, env: { ...process.env, HOME: dir, KUBECONFIG: '' } },
        (err, stdout, stderr) => done({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      );
    });
  }

  it('kubectl version and api-resources say the release: 1.36 serves no DeviceTaintRule by default', async () => {
    const v = await kubectl(['version', '-o', 'json']);
    expect(v.code).toBe(0);
    expect(JSON.parse(v.stdout).serverVersion).toMatchObject({ major: '1', minor: '36' });
    const r = await kubectl(['api-resources', '--api-group=resource.k8s.io', '-o', 'name']);
    expect(r.code).toBe(0);
    expect(r.stdout.trim().split('\n')).toEqual([
      'deviceclasses.resource.k8s.io',
      'resourceclaims.resource.k8s.io',
      'resourceclaimtemplates.resource.k8s.io',
      'resourceslices.resource.k8s.io',
    ]);
    const get = await kubectl(['get', 'devicetaintrules.v1beta2.resource.k8s.io']);
    expect(get.code).not.toBe(0);
  });

  it("kubectl apply -k infra/k8s creates the repository's manifests, RBAC included", async () => {
    const r = await kubectl(['apply', '-k', 'infra/k8s']);
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(/clusterrolebinding.rbac.authorization.k8s.io\/gpu-reflex-functions created/);
    expect(r.stdout).toMatch(/serviceaccount\/gpu-reflex-functions created/);
  });

  it.each([
    ['patch nodes', [], 'yes'],
    ['delete nodes', [], 'no'],
    ['create pods --subresource=eviction', ['-n', 'serve'], 'yes'],
    ['delete pods', ['-n', 'serve'], 'no'],
    ['list resourceslices.resource.k8s.io', [], 'yes'],
    ['create resourceslices.resource.k8s.io', [], 'no'],
    ['update configmaps', ['-n', 'gpu-reflex'], 'yes'],
    ['update configmaps', ['-n', 'serve'], 'no'],
    ['delete leases.coordination.k8s.io', ['-n', 'gpu-reflex'], 'yes'],
  ])("kubectl auth can-i %s %j as the functions' ServiceAccount: %s", async (what, ns, answer) => {
    const r = await kubectl(['auth', 'can-i', ...what.split(' '), ...ns, `--as=${FUNCTIONS}`]);
    expect(r.stdout.trim()).toBe(answer);
    expect(r.code).toBe(answer === 'yes' ? 0 : 1);
  });

  it('a request made --as the ServiceAccount is refused with the real 403 where RBAC does not allow it', async () => {
    const ok = await kubectl(['get', 'nodes', `--as=${FUNCTIONS}`]);
    expect(ok.code).toBe(0);
    const r = await kubectl(['delete', 'node', 'gpu-a', `--as=${FUNCTIONS}`]);
    expect(r.code).toBe(1);
    expect(r.stderr.trim()).toBe(
      `Error from server (Forbidden): nodes "gpu-a" is forbidden: User "${FUNCTIONS}" cannot delete resource ` +
        '"nodes" in API group "" at the cluster scope',
    );
    expect(sim.store.node('gpu-a')).toBeDefined();
  });

  it('kubectl explain reads the served OpenAPI v3: node.spec.taints and its fields', async () => {
    const r = await kubectl(['explain', 'node.spec.taints']);
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(/^KIND:\s+Node\nVERSION:\s+v1\n/);
    expect(r.stdout).toMatch(/FIELD: taints <\[\]Taint>/);
    expect(r.stdout).toMatch(/effect\t<string> -required-/);
    expect(r.stdout).toMatch(/key\t<string> -required-/);
    expect(r.stdout).toMatch(/timeAdded\t<string>/);
  });

  it.each([
    ['pods.spec.containers.resources', /FIELD: resources <ResourceRequirements>/],
    ['poddisruptionbudgets.spec.minAvailable', /FIELD: minAvailable <IntOrString>/],
    ['clusterroles', /GROUP:\s+rbac.authorization.k8s.io\nKIND:\s+ClusterRole\n/],
  ])('kubectl explain %s', async (path, shape) => {
    const r = await kubectl(['explain', path]);
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(shape);
  });
});
