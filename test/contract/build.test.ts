import { execFile } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = new URL('../../', import.meta.url).pathname;

describe('npm run build', () => {
  it('bundles every function in serverless.yml into an ESM file that loads and answers like the handler', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, [join(root, 'scripts/build.js')], { cwd: root });
    expect(stdout).toMatch(/^remediate\s+\.build\/functions\/remediate\/index\.mjs/m);
    expect(stdout).toMatch(/^remediate-sweep\s+/m);
    expect(stdout).toMatch(/^node-agent\s+\.build\/node-agent\/agent\.mjs/m);
    // The shipped agent bundle runs on plain node and says what is missing.
    const agent = await promisify(execFile)(process.execPath, [join(root, '.build/node-agent/agent.mjs'), '--once', '--dry-run'], { env: { ...process.env, NVML_LIBRARY_PATH: '/nonexistent/libnvidia-ml.so.1' } }).catch((e: { code: number; stderr: string }) => e);
    expect(agent).toMatchObject({ code: 3, stderr: expect.stringContaining('NVML not found at /nonexistent/libnvidia-ml.so.1: is the NVIDIA driver installed?') });
    // The bundle must run on its own (createRequire banner): a malformed event is dropped, not retried.
    const dir = await mkdtemp(join(tmpdir(), 'gr-build-'));
    const kubeconfig = join(dir, 'kubeconfig');
    await writeFile(kubeconfig, 'apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "http://127.0.0.1:1", insecure-skip-tls-verify: true}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n');
    process.env.KUBECONFIG = kubeconfig;
    try {
      const mod = (await import(pathToFileURL(join(root, '.build/functions/remediate/index.mjs')).href)) as { handler: (e: unknown, c: unknown) => Promise<unknown> };
      await expect(mod.handler({ version: '0', id: 'x' }, { awsRequestId: 'r1' })).resolves.toMatchObject({ status: 'dropped' });
    } finally {
      delete process.env.KUBECONFIG;
    }
  });
});
