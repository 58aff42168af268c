import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { pathToFileURL } from 'node:url';
import { CoreV1Api } from '@kubernetes/client-node';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadKubeConfig } from '../../functions/adapters/kube/config.ts';
import { EXAMPLE_FLEET_PATH, startKubeSim } from '../../infra/local/kube/index.ts';

const root = new URL('../../', import.meta.url).pathname;
type Handler = { handler: (e: unknown, c: unknown) => Promise<unknown> };

/** A PutEvents endpoint that accepts everything and keeps what it got. */
async function fakeBus(): Promise<{ server: Server; url: string; entries: { DetailType: string }[] }> {
  const entries: { DetailType: string }[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const got = (JSON.parse(body) as { Entries: { DetailType: string }[] }).Entries;
      entries.push(...got);
      res.writeHead(200, { 'content-type': 'application/x-amz-json-1.1' }).end(JSON.stringify({ FailedEntryCount: 0, Entries: got.map((_, i) => ({ EventId: `e${entries.length + i}` })) }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, entries };
}

describe('npm run build', () => {
  let stdout = '';
  // The build parses client-node's generated API once (scripts/kube-api-slim.js): allow for a loaded machine.
  beforeAll(async () => {
    ({ stdout } = await promisify(execFile)(process.execPath, [join(root, 'scripts/build.js')], { cwd: root }));
  }, 180_000);

  it('bundles every function in serverless.yml into an ESM file that loads and answers like the handler', async () => {
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
      const mod = (await import(pathToFileURL(join(root, '.build/functions/remediate/index.mjs')).href)) as Handler;
      await expect(mod.handler({ version: '0', id: 'x' }, { awsRequestId: 'r1' })).resolves.toMatchObject({ status: 'dropped' });
    } finally {
      delete process.env.KUBECONFIG;
    }
  });

  // The bundles carry a trimmed client-node (only the operations in api-methods.ts, only the models
  // they reach) and the SDK's ES module build: run the real remediation through them, in a child
  // process of its own, against the simulated API server and a PutEvents endpoint.
  it('the remediate bundle drains a node on XID 79 against the simulated cluster and publishes its report', async () => {
    const sim = await startKubeSim({ fleet: EXAMPLE_FLEET_PATH });
    const bus = await fakeBus();
    try {
      const dir = await mkdtemp(join(tmpdir(), 'gr-build-'));
      const kubeconfig = join(dir, 'kubeconfig');
      await writeFile(kubeconfig, sim.kubeconfig());
      const event = JSON.parse(readFileSync(join(root, 'events/catalog/gpu-xid-error.example.json'), 'utf8')) as { detail: { node: string; pods: unknown[] } };
      event.detail = { ...event.detail, node: 'a100-train-0', pods: [] };
      const script = `const m = await import(${JSON.stringify(pathToFileURL(join(root, '.build/functions/remediate/index.mjs')).href)});
        console.log(JSON.stringify(await m.handler(${JSON.stringify(event)}, { awsRequestId: 'r1' })));`;
      const out = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], {
        env: { PATH: process.env.PATH, KUBECONFIG: kubeconfig, AWS_REGION: 'us-east-1', AWS_ACCESS_KEY_ID: 'test', AWS_SECRET_ACCESS_KEY: 'test', AWS_ENDPOINT_URL_EVENTBRIDGE: bus.url, LOG_LEVEL: 'error' },
      });
      expect(JSON.parse(out.stdout.trim().split('\n').at(-1)!)).toMatchObject({ status: 'done' });
      const node = await loadKubeConfig({ kubeconfigText: sim.kubeconfig() }).makeApiClient(CoreV1Api).readNode({ name: 'a100-train-0' });
      expect(node.spec?.unschedulable).toBe(true);
      expect(bus.entries.map((e) => e.DetailType)).toContain('Remediation');
    } finally {
      bus.server.close();
      await sim.close();
    }
  });
});
