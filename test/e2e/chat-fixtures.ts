/**
 * What the ChatOps end-to-end tests share: a stand-in for the chat platform's incoming side (every
 * post the functions make, by path: an incoming webhook at /hook, response_url posts elsewhere), a
 * roles file, and a pool of GPU nodes each running one job for an XID storm to hit.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Fleet, Node } from '../../infra/local/kube/index.ts';
import { NAMESPACE } from './remediation-stack.ts';

export interface ChatPost {
  path: string;
  json: Record<string, unknown>;
}

export interface ChatStandIn {
  /** Every post, in order. */
  posts: ChatPost[];
  /** http://127.0.0.1:PORT */
  url: string;
  close(): Promise<void>;
}

export async function startChatStandIn(): Promise<ChatStandIn> {
  const posts: ChatPost[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      posts.push({ path: req.url ?? '', json: JSON.parse(body) as Record<string, unknown> });
      res.end('ok');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    posts,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((r) => server.close(() => r())),
  };
}

/** A roles file: Slack user U-OPS is an operator, everyone else a viewer. */
export function operatorRoles(prefix: string): string {
  const path = join(mkdtempSync(join(tmpdir(), prefix)), 'chatops.yaml');
  writeFileSync(path, 'roles:\n  - { match: { platform: slack, user: U-OPS }, role: operator }\ndefault: viewer\n');
  return path;
}

export const TAINT_KEY = 'gpu-reflex.io/unhealthy';

/** `size` 8-GPU nodes of pool `pool`, each running a two-GPU job. */
export function stormFleet(pool: string, size: number): Fleet {
  return {
    nodes: [
      {
        name: pool,
        count: size,
        labels: { 'gpu-reflex.io/pool': pool },
        allocatable: { cpu: '96', memory: '1000Gi', 'nvidia.com/gpu': '8' },
      },
    ],
    namespaces: [{ name: NAMESPACE }, { name: 'ml' }],
    pods: Array.from({ length: size }, (_, i) => ({
      name: `w-${i}`,
      namespace: 'ml',
      node: `${pool}-${i}`,
      owner: { kind: 'Job' as const, name: `w-${i}` },
      requests: { 'nvidia.com/gpu': 2 },
    })),
  };
}

export const stormGpu = (i: number) => ({
  index: 0,
  uuid: `GPU-${String(i).padStart(8, '0')}-0000-4000-8000-000000000000`,
  pciBusId: '00000000:10:00.0',
  name: 'NVIDIA A100-SXM4-80GB',
});

/** Cordoned or carrying gpu-reflex's taint. */
export const isOut = (n: Node) =>
  n.spec?.unschedulable === true || (n.spec?.taints ?? []).some((x) => x.key === TAINT_KEY);
