/**
 * `bench deploy`: what a Lambda cold start pays for each function's bundle (issue #16). Sizes of the
 * artifacts `npm run build` writes (what `package.artifact` ships: the .mjs files, not the source
 * maps); then, in fresh node processes, each bundle's module initialisation (the import of its
 * entry) and its first invocation (one example event handled against the local stack: the
 * simulated Kubernetes API server and a stand-in PutEvents endpoint), beside a bare
 * `@aws-sdk/client-eventbridge` import and that client's first PutEvents, measured in the same
 * rounds, interleaved, so machine load falls on all alike. Ratios are per round, then the median of
 * the rounds. Init and first invocation are reported together: deferring work to the first call
 * only helps a cold start where that call never needs it.
 */
import { execFile } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { readdirSync, readFileSync, statSync, writeFileSync, mkdtempSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { EXAMPLE_FLEET_PATH, startKubeSim } from '../infra/local/kube/index.ts';
import { below, info, percentile, type BenchSuite, type Measurement } from './harness.ts';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../', import.meta.url));
const ROUNDS = 9;
const MAX_BYTES = 1_500_000;
const BARE = '@aws-sdk/client-eventbridge';
const SLACK_SECRET = 'bench-slack-signing-secret';

/** Bytes a function's artifact unpacks to: every file of its build but the source maps. */
export function artifactBytes(dir: string): number {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && !e.name.endsWith('.map'))
    .reduce((n, e) => n + statSync(join(e.parentPath, e.name)).size, 0);
}

const example = (name: string) =>
  JSON.parse(readFileSync(join(root, 'events/catalog', `${name}.example.json`), 'utf8')) as {
    detail: Record<string, unknown>;
  } & Record<string, unknown>;
const schedule = {
  version: '0',
  id: 'bench-schedule',
  'detail-type': 'Scheduled Event',
  source: 'aws.events',
  account: '123456789012',
  time: '2026-11-26T00:00:00Z',
  region: 'us-east-1',
  resources: [],
  detail: {},
};

/** A signed Slack slash command `status` (viewer role: lists the GPU nodes), as API Gateway v2 delivers it. */
function chatStatus(): unknown {
  const ts = String(Math.floor(Date.now() / 1000));
  const body = new URLSearchParams({
    user_id: 'U-BENCH',
    user_name: 'bench',
    channel_id: 'C-GPU',
    command: '/gpu',
    text: 'status',
  }).toString();
  const signature = `v0=${createHmac('sha256', SLACK_SECRET).update(`v0:${ts}:${body}`).digest('hex')}`;
  return {
    version: '2.0',
    routeKey: 'POST /chat/{platform}',
    rawPath: '/chat/slack',
    rawQueryString: '',
    pathParameters: { platform: 'slack' },
    isBase64Encoded: false,
    body,
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      'x-slack-request-timestamp': ts,
      'x-slack-signature': signature,
    },
    requestContext: { http: { method: 'POST', path: '/chat/slack' }, requestId: 'bench' },
  };
}

/**
 * The event each function's first invocation handles: its example from events/catalog, on a node of the example fleet;
 * a schedule tick for the scheduled ones.
 */
function firstEvent(fn: string): unknown {
  const onNode = (name: string, extra: Record<string, unknown> = {}) => {
    const e = example(name);
    return { ...e, detail: { ...e.detail, node: 'a100-train-0', ...extra } };
  };
  switch (fn) {
    case 'remediate':
      return onNode('gpu-xid-error', { pods: [] });
    case 'remediate-approve':
      return example('approval-decided');
    case 'remediate-gpu-action':
      return onNode('gpu-action-result');
    case 'label-nodes':
      return onNode('gpu-inventory');
    case 'chatops':
      return chatStatus();
    default:
      return schedule; // remediate-sweep, rebalance-mig, autoscale-pools, rewrite-quotas
  }
}

/**
 * What a handled event answers: `done` (or already done), HTTP 200 for chat. Anything else makes the timing
 * meaningless.
 */
function handled(outcome: unknown): boolean {
  const o = outcome as { status?: string; statusCode?: number; FailedEntryCount?: number };
  return o.status === 'done' || o.status === 'already-done' || o.statusCode === 200 || o.FailedEntryCount === 0;
}

/** A PutEvents endpoint that accepts every entry (the functions' reports, the bare client's event). */
async function standInBus(): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const n = (JSON.parse(body) as { Entries: unknown[] }).Entries.length;
      res
        .writeHead(200, { 'content-type': 'application/x-amz-json-1.1' })
        .end(
          JSON.stringify({ FailedEntryCount: 0, Entries: Array.from({ length: n }, (_, i) => ({ EventId: `e${i}` })) }),
        );
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

interface ColdStart {
  initMs: number;
  firstMs: number;
}

async function coldStart(spec: string, eventFile: string, env: NodeJS.ProcessEnv): Promise<ColdStart> {
  const { stdout } = await run(process.execPath, [join(root, 'bench/deploy-first-call.mjs'), spec, eventFile], {
    cwd: root,
    env,
  });
  const r = JSON.parse(stdout.trim().split('\n').at(-1)!) as ColdStart & { outcome: unknown };
  if (!handled(r.outcome))
    throw new Error(`bench deploy: ${spec} did not handle its event: ${JSON.stringify(r.outcome)}`);
  return r;
}

export const deploySuite: BenchSuite = {
  name: 'deploy',
  summary:
    'function artifacts: unpacked size; module init and first invocation beside a bare EventBridge-client import',
  async run(progress) {
    progress('npm run build');
    await run(process.execPath, [join(root, 'scripts/build.js')], { cwd: root });
    const dir = join(root, '.build/functions');
    const names = readdirSync(dir)
      .filter((n) => statSync(join(dir, n)).isDirectory())
      .sort();
    const rows: Measurement[] = names.map((n) =>
      below(`${n}: artifact unpacked`, artifactBytes(join(dir, n)) / 1e6, 'MB', MAX_BYTES / 1e6),
    );
    const work = mkdtempSync(join(tmpdir(), 'gr-bench-deploy-'));
    const events = new Map(
      names.map((n) => {
        const file = join(work, `${n}.json`);
        writeFileSync(file, JSON.stringify(firstEvent(n)));
        return [n, file];
      }),
    );
    const bareEvent = join(work, 'bare.json');
    writeFileSync(bareEvent, JSON.stringify(example('gpu-xid-error')));
    const bare: ColdStart[] = [];
    const runs = new Map<string, { init: number[]; first: number[]; initRatio: number[]; totalRatio: number[] }>(
      names.map((n) => [n, { init: [], first: [], initRatio: [], totalRatio: [] }]),
    );
    for (let r = 0; r < ROUNDS; r++) {
      progress(`cold starts, round ${r + 1} of ${ROUNDS}`);
      // A fresh cluster each round, so every round's first invocation finds the same state.
      const sim = await startKubeSim({ fleet: EXAMPLE_FLEET_PATH });
      const bus = await standInBus();
      try {
        const kubeconfig = join(work, 'kubeconfig');
        sim.writeKubeconfig(kubeconfig);
        const env = {
          PATH: process.env.PATH,
          KUBECONFIG: kubeconfig,
          AWS_REGION: 'us-east-1',
          AWS_ACCESS_KEY_ID: 'bench',
          AWS_SECRET_ACCESS_KEY: 'bench',
          AWS_ENDPOINT_URL_EVENTBRIDGE: bus.url,
          LOG_LEVEL: 'error',
          CHAT_SLACK_SIGNING_SECRET: SLACK_SECRET,
        };
        const b = await coldStart(BARE, bareEvent, env);
        bare.push(b);
        for (const n of names) {
          const c = await coldStart(pathToFileURL(join(dir, n, 'index.mjs')).href, events.get(n)!, env);
          const m = runs.get(n)!;
          m.init.push(c.initMs);
          m.first.push(c.firstMs);
          m.initRatio.push(c.initMs / b.initMs);
          m.totalRatio.push((c.initMs + c.firstMs) / (b.initMs + b.firstMs));
        }
      } finally {
        bus.server.close();
        await sim.close();
      }
    }
    const med = (xs: number[]) => percentile(xs, 50);
    rows.push(info('bare @aws-sdk/client-eventbridge: import (median)', med(bare.map((b) => b.initMs)), 'ms'));
    rows.push(info('bare client: first PutEvents (median)', med(bare.map((b) => b.firstMs)), 'ms'));
    rows.push(info('bare client: import + first PutEvents (median)', med(bare.map((b) => b.initMs + b.firstMs)), 'ms'));
    for (const n of names) {
      const m = runs.get(n)!;
      rows.push(info(`${n}: module init (median)`, med(m.init), 'ms'));
      const ratio = med(m.initRatio);
      rows.push({
        metric: `${n}: init ÷ bare client import (median)`,
        value: ratio,
        unit: '×',
        target: '≤ 1.0 ×',
        ok: ratio <= 1,
      });
      rows.push(info(`${n}: first invocation (median)`, med(m.first), 'ms'));
      rows.push(info(`${n}: init + first invocation (median)`, med(m.init.map((x, i) => x + m.first[i]!)), 'ms'));
      rows.push(info(`${n}: init + first invocation ÷ bare import + first PutEvents (median)`, med(m.totalRatio), '×'));
    }
    return rows;
  },
};
