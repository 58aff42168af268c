#!/usr/bin/env node
// `npm run build`: one esbuild bundle per function in serverless.yml, under .build/functions/<name>/.
// Bundles target node20 (so they also run here) while Lambda runs nodejs22.x; ESM bundles need the
// createRequire banner because the AWS SDK and client-node still call require() inside.
import { mkdir, stat } from 'node:fs/promises';
import { readFileSync, existsSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { parseDocument } from 'yaml';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const doc = parseDocument(readFileSync(join(root, 'serverless.yml'), 'utf8'), { logLevel: 'silent' });
const functions = doc.toJS({ maxAliasCount: 100 })?.functions ?? {};
const names = Object.keys(functions);
if (names.length === 0) {
  console.error('serverless.yml declares no functions: nothing to build');
  process.exit(1);
}
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
    logLevel: 'warning',
  });
  const { size } = await stat(outfile);
  console.log(`${name.padEnd(20)} ${relative(root, outfile)}  ${(size / 1024 / 1024).toFixed(2)} MB`);
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
