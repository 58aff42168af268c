#!/usr/bin/env node
// `npm run build`: one esbuild bundle per function in serverless.yml, under .build/functions/<name>/,
// and the zip Lambda is given, .build/artifacts/<name>.zip (serverless.yml's `package.artifact`).
// Bundles target node20 (so they also run here) while Lambda runs nodejs22.x; ESM bundles need the
// createRequire banner because the AWS SDK and client-node still call require() inside.
import { mkdir, readFile, stat } from 'node:fs/promises';
import { createWriteStream, readFileSync, existsSync } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { tsImport } from 'tsx/esm/api';
import { parseDocument } from 'yaml';
import yazl from 'yazl';
import { kubeApiSlim } from './kube-api-slim.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
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
  shim('kube-client', /^@kubernetes\/client-node$/, [
    "export { KubeConfig } from '@kubernetes/client-node/dist/config.js';",
    "export * from '@kubernetes/client-node/dist/gen/index.js';",
    "export { PatchStrategy } from '@kubernetes/client-node/dist/patch.js';",
    "export { setHeaderOptions } from '@kubernetes/client-node/dist/middleware.js';",
    "export { V1MicroTime } from '@kubernetes/client-node/dist/types.js';",
  ].join('\n')),
  // node-fetch 2 takes Node's own URL (`Url.URL || whatwgUrl.URL`): whatwg-url and its 0.26 MB
  // Unicode table (tr46) never run here.
  shim('whatwg-url', /^whatwg-url$/, 'exports.URL = globalThis.URL;'),
  // zod's `z.locales` namespace holds every language's messages (0.26 MB); the functions speak English.
  {
    name: 'zod-locales',
    setup(b) {
      b.onResolve({ filter: /[\\/]locales[\\/]index\.js$|^\.\.\/locales\/index\.js$/ }, (args) =>
        /[\\/]zod[\\/]/.test(args.importer) ? { path: join(dirname(args.importer), args.path.replace(/index\.js$/, 'en.js')), namespace: 'zod-en' } : undefined);
      b.onLoad({ filter: /.*/, namespace: 'zod-en' }, (args) => ({ contents: `export { default as en } from ${JSON.stringify(args.path)};`, loader: 'js', resolveDir: root }));
    },
  },
  // Only the Kubernetes operations the adapters call (functions/adapters/kube/api-methods.ts).
  kubeApiSlim(KUBE_API_METHODS),
];
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
  const outfile = join(root, '.build', 'functions', name, 'index.mjs');
  await mkdir(dirname(outfile), { recursive: true });
  await build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'esm',
    minify: true,
    sourcemap: 'linked',
    legalComments: 'none',
    banner: { js: "import { createRequire } from 'module'; const require = createRequire(import.meta.url);" },
    // The SDK's and others' ES module builds: esbuild can drop what is not used of them (CommonJS it cannot).
    mainFields: ['module', 'main'],
    plugins: functionPlugins,
    logLevel: 'warning',
  });
  const { size } = await stat(outfile);
  console.log(`${name.padEnd(20)} ${relative(root, outfile)}  ${(size / 1024 / 1024).toFixed(2)} MB`);
  await writeArtifact(join(root, '.build', 'artifacts', `${name}.zip`), `${handler.slice(0, dot)}.mjs`, outfile);
}

/**
 * The function's Lambda artifact: its bundle, alone, at the path serverless.yml's `handler` names
 * (functions/remediate/handler.handler → functions/remediate/handler.mjs; the Node runtime tries
 * .js, .mjs, .cjs). So one `handler` serves the bundler, the local bus (the .ts beside it) and
 * Lambda, with no rewriting at package time. The source map stays out: it is larger than the
 * bundle and the 1.5 MB budget is for what Lambda unpacks. A fixed timestamp keeps the zip the same
 * bytes for the same bundle, so a deploy skips functions whose code did not change.
 */
async function writeArtifact(zipPath, entryName, bundle) {
  await mkdir(dirname(zipPath), { recursive: true });
  const zip = new yazl.ZipFile();
  zip.addBuffer(await readFile(bundle), entryName, { mtime: new Date('2000-01-01T00:00:00Z'), mode: 0o100644 });
  zip.end();
  await pipeline(zip.outputStream, createWriteStream(zipPath));
}
// The node agent as the DaemonSet image would run it: plain JavaScript, koffi (a native addon)
// left to node_modules.
{
  const outfile = join(root, '.build', 'node-agent', 'agent.mjs');
  await build({
    entryPoints: [join(root, 'node-agent', 'main.ts')],
    outfile,
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'esm',
    external: ['koffi'],
    legalComments: 'none',
    banner: { js: "import { createRequire } from 'module'; const require = createRequire(import.meta.url);" },
    logLevel: 'warning',
  });
  const { size } = await stat(outfile);
  console.log(`${'node-agent'.padEnd(20)} ${relative(root, outfile)}  ${(size / 1024 / 1024).toFixed(2)} MB`);
}
process.exit(failed ? 1 : 0);
