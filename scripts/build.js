#!/usr/bin/env node
// `npm run build`: one esbuild bundle per function in serverless.yml, under .build/functions/<name>/,
// and the zip Lambda is given, .build/artifacts/<name>.zip (serverless.yml's `package.artifact`).
// Bundles target node22, what Lambda (nodejs22.x) and the agent image run; the suite runs them on this
// machine's Node 20 as well, and test/contract/build.test.ts under Node 22 itself. ESM bundles need the
// createRequire banner because the AWS SDK and client-node still call require() inside.
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createWriteStream, readFileSync, readdirSync, statSync, existsSync } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { tsImport } from 'tsx/esm/api';
import { parseDocument } from 'yaml';
import yazl from 'yazl';
import { agentBuildOptions } from './agent-bundle.js';
import { kubeApiSlim } from './kube-api-slim.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
// `--target alibaba` (npm run package -- --target alibaba, docs/deploy-alibaba.md): each function
// with Function Compute's entry in front (functions/lib/fc-entry.ts), for FC 3.0's nodejs20, under
// .build/alibaba/; the node agent is not built (its image is the same for both clouds).
const targetAt = process.argv.indexOf('--target');
const target = targetAt >= 0 ? process.argv[targetAt + 1] : 'aws';
if (target !== 'aws' && target !== 'alibaba') {
  console.error(`--target must be aws or alibaba (got ${JSON.stringify(target)})`);
  process.exit(2);
}
const alibaba = target === 'alibaba';
const buildRoot = alibaba ? join(root, '.build', 'alibaba') : join(root, '.build');
const doc = parseDocument(readFileSync(join(root, 'serverless.yml'), 'utf8'), { logLevel: 'silent' });
const functions = doc.toJS({ maxAliasCount: 100 })?.functions ?? {};
const names = Object.keys(functions);
if (names.length === 0) {
  console.error('serverless.yml declares no functions: nothing to build');
  process.exit(1);
}
// What the functions' bundles leave out, none of it reachable on Node (docs/deploy.md#bundles):
const { KUBE_API_METHODS } = await tsImport('../functions/adapters/kube/api-methods.ts', import.meta.url);
const shim = (name, filter, contents) => ({
  name,
  setup(b) {
    b.onResolve({ filter }, (args) => ({ path: args.path, namespace: name }));
    b.onLoad({ filter: /.*/, namespace: name }, () => ({ contents, loader: 'js', resolveDir: root }));
  },
});
const functionPlugins = [
  // client-node's barrel pulls in exec, attach, port-forward and cp (ws, tar): the adapters use none.
  shim(
    'kube-client',
    /^@kubernetes\/client-node$/,
    [
      "export { KubeConfig } from '@kubernetes/client-node/dist/config.js';",
      "export * from '@kubernetes/client-node/dist/gen/index.js';",
      "export { PatchStrategy } from '@kubernetes/client-node/dist/patch.js';",
      "export { setHeaderOptions } from '@kubernetes/client-node/dist/middleware.js';",
      "export { V1MicroTime } from '@kubernetes/client-node/dist/types.js';",
    ].join('\n'),
  ),
  // node-fetch 2 takes Node's own URL (`Url.URL || whatwgUrl.URL`): whatwg-url and its 0.26 MB
  // Unicode table (tr46) never run here.
  shim('whatwg-url', /^whatwg-url$/, 'exports.URL = globalThis.URL;'),
  // The AWS SDK's browser user-agent parser (bowser, 34 kB) is imported only by
  // createUserAgentStringParsingProvider, which parses `window.navigator.userAgent`: browsers only.
  shim('bowser', /^bowser$/, 'module.exports = {};'),
  // xml2js's Builder (xmlbuilder, 68 kB) serves @alicloud/tea-xml's toXML, which
  // @alicloud/openapi-client never calls (it only parses XML answers, with parseXml); a call throws.
  shim(
    'xmlbuilder',
    /^xmlbuilder$/,
    "module.exports = { create() { throw new Error('xmlbuilder is left out of the bundle (scripts/build.js)'); } };",
  ),
  // jsonpath-plus (25 kB) serves only client-node's legacy `gcp` and `azure` auth-provider
  // kubeconfigs, which Kubernetes removed in 1.26 for exec plugins; EKS, ACK, a ServiceAccount token
  // and exec credentials never reach it. Such a kubeconfig fails with this message.
  shim(
    'jsonpath-plus',
    /^jsonpath-plus$/,
    "export const JSONPath = () => { throw new Error('jsonpath-plus is left out of the bundle (scripts/build.js): a " +
      "gcp/azure auth-provider kubeconfig is not supported; use exec credentials'); };",
  ),
  // zod's `z.locales` namespace holds every language's messages (0.26 MB); the functions speak English.
  {
    name: 'zod-locales',
    setup(b) {
      b.onResolve({ filter: /[\\/]locales[\\/]index\.js$|^\.\.\/locales\/index\.js$/ }, (args) =>
        /[\\/]zod[\\/]/.test(args.importer)
          ? { path: join(dirname(args.importer), args.path.replace(/index\.js$/, 'en.js')), namespace: 'zod-en' }
          : undefined,
      );
      b.onLoad({ filter: /.*/, namespace: 'zod-en' }, (args) => ({
        contents: `export { default as en } from ${JSON.stringify(args.path)};`,
        loader: 'js',
        resolveDir: root,
      }));
    },
  },
  // Only the Kubernetes operations the adapters call (functions/adapters/kube/api-methods.ts).
  kubeApiSlim(KUBE_API_METHODS),
];
// Each cloud's package carries its own bus client only: on AWS the functions publish through the AWS
// SDK (functions/adapters/bus-select.ts picks Alibaba's only where ALIBABA_EVENTBRIDGE_ENDPOINT is
// set, which the AWS template never sets), so Alibaba's data-plane client (60 kB a function) stays out;
// set on Lambda anyway, the first publish fails saying so.
const awsOnly = shim(
  'alibaba-eventbridge',
  /^@alicloud\/eventbridge$/,
  "export class Config {} export default class { constructor() { throw new Error('this package was built for AWS " +
    "(npm run package): Alibaba EventBridge is in the --target alibaba build (ALIBABA_EVENTBRIDGE_ENDPOINT)'); } }",
);
let failed = 0;
for (const name of names) {
  const handler = String(functions[name].handler ?? '');
  const dot = handler.lastIndexOf('.');
  const entry = join(root, `${handler.slice(0, dot)}.ts`);
  if (dot < 0 || !existsSync(entry)) {
    console.error(`${name}: handler ${JSON.stringify(handler)} has no file ${relative(root, entry)}`);
    failed++;
    continue;
  }
  const outdir = join(buildRoot, 'functions', name);
  // Chunks are named by content hash: a stale one from an earlier build would ship and count.
  await rm(outdir, { recursive: true, force: true });
  const { metafile } = await build({
    entryPoints: { index: alibaba ? 'fc-entry' : entry },
    outdir,
    // Code reached only through `import()` (the wiring's clients: client-node, the AWS SDK, the
    // Alibaba SDKs) goes into chunks of its own, loaded at the first invocation: the module Lambda
    // imports at a cold start is only what the handler needs before it is called.
    splitting: true,
    chunkNames: 'chunk-[hash]',
    outExtension: { '.js': '.mjs' },
    metafile: true,
    bundle: true,
    platform: 'node',
    target: alibaba ? 'node20' : 'node22',
    format: 'esm',
    minify: true,
    sourcemap: 'linked',
    legalComments: 'none',
    // Every chunk gets it: each is a module of its own that may call require().
    banner: { js: "import { createRequire } from 'module'; const require = createRequire(import.meta.url);" },
    // The SDK's and others' ES module builds: esbuild can drop what is not used of them (CommonJS it cannot).
    mainFields: ['module', 'main'],
    plugins: alibaba ? [fcEntryPlugin(entry), ...functionPlugins] : [awsOnly, ...functionPlugins],
    logLevel: 'warning',
  });
  // What went into which file and what imports what, statically or by import(): the deferral
  // test (test/contract/build.test.ts) and `bench deploy` read it.
  await mkdir(join(buildRoot, 'meta'), { recursive: true });
  await writeFile(join(buildRoot, 'meta', `${name}.json`), JSON.stringify(metafile));
  const files = readdirSync(outdir)
    .filter((f) => f.endsWith('.mjs'))
    .sort();
  const mb = (paths) =>
    `${([...paths].reduce((n, f) => n + statSync(join(root, f)).size, 0) / 1024 / 1024).toFixed(2)} MB`;
  const entryOut = relative(root, join(outdir, 'index.mjs'));
  console.log(
    `${name.padEnd(20)} ${entryOut}  ${mb(files.map((f) => relative(root, join(outdir, f))))} in ${files.length} ` +
      `files, ${mb(staticallyLoaded(metafile, entryOut))} of them at import`,
  );
  const base = handler.slice(0, dot);
  // FC's handler is `index.handler`: the entry at the zip's root, its chunks beside it.
  if (alibaba) {
    await writeArtifact(
      join(buildRoot, 'code', `${name}.zip`),
      files.map((f) => [f, join(outdir, f)]),
    );
    continue;
  }
  await writeArtifact(
    join(root, '.build', 'artifacts', `${name}.zip`),
    files.map((f) => [f === 'index.mjs' ? `${base}.mjs` : join(dirname(base), f), join(outdir, f)]),
  );
}

/** The outputs node loads when it imports `entry`: it and every chunk it imports statically. */
function staticallyLoaded(metafile, entry) {
  const seen = new Set([entry]);
  for (const out of seen)
    for (const i of metafile.outputs[out].imports) if (i.kind === 'import-statement' && !i.external) seen.add(i.path);
  return seen;
}

/**
 * The function's Lambda artifact: its bundle, alone: the entry at the path serverless.yml's
 * `handler` names (functions/remediate/handler.handler → functions/remediate/handler.mjs; the Node
 * runtime tries .js, .mjs, .cjs) and its chunks beside it, where the entry's `import './chunk-…'`
 * finds them. So one `handler` serves the bundler, the local bus (the .ts beside it) and Lambda,
 * with no rewriting at package time. Source maps stay out: they are larger than the bundle and the
 * 1.5 MB budget is for what Lambda unpacks. A fixed timestamp keeps the zip the same
 * bytes for the same bundle, so a deploy skips functions whose code did not change.
 */
async function writeArtifact(zipPath, entries) {
  await mkdir(dirname(zipPath), { recursive: true });
  const zip = new yazl.ZipFile();
  for (const [name, file] of entries)
    zip.addBuffer(await readFile(file), name, { mtime: new Date('2000-01-01T00:00:00Z'), mode: 0o100644 });
  zip.end();
  await pipeline(zip.outputStream, createWriteStream(zipPath));
}
/** The FC entry in front of a function's AWS handler (functions/lib/fc-entry.ts). */
function fcEntryPlugin(entry) {
  return {
    name: 'fc-entry',
    setup(b) {
      b.onResolve({ filter: /^fc-entry$/ }, () => ({ path: 'fc-entry', namespace: 'fc-entry' }));
      b.onLoad({ filter: /.*/, namespace: 'fc-entry' }, () => ({
        contents:
          `import { handler as aws } from ${JSON.stringify(entry)};\n` +
          `import { fcEntry } from ${JSON.stringify(join(root, 'functions', 'lib', 'fc-entry.ts'))};\n` +
          'export const handler = fcEntry(aws);\n',
        loader: 'js',
        resolveDir: root,
      }));
    },
  };
}
if (alibaba) process.exit(failed ? 1 : 0);
// The node agent as the DaemonSet image would run it: .build/node-agent/agent.mjs and the chunks
// only its import() loads (scripts/agent-bundle.js); the Dockerfile copies the folder.
{
  const outdir = join(root, '.build', 'node-agent');
  await rm(outdir, { recursive: true, force: true });
  const { metafile } = await build({ ...agentBuildOptions(root, outdir), metafile: true });
  await mkdir(join(root, '.build', 'meta'), { recursive: true });
  await writeFile(join(root, '.build', 'meta', 'node-agent.json'), JSON.stringify(metafile));
  const files = readdirSync(outdir)
    .filter((f) => f.endsWith('.mjs'))
    .sort();
  const mb = (paths) =>
    `${([...paths].reduce((n, f) => n + statSync(join(root, f)).size, 0) / 1024 / 1024).toFixed(2)} MB`;
  const entryOut = relative(root, join(outdir, 'agent.mjs'));
  console.log(
    `${'node-agent'.padEnd(20)} ${entryOut}  ${mb(files.map((f) => relative(root, join(outdir, f))))} ` +
      `in ${files.length} files, ${mb(staticallyLoaded(metafile, entryOut))} of them at import`,
  );
}
process.exit(failed ? 1 : 0);
