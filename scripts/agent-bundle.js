// The node agent's esbuild options, one place for `npm run build` (scripts/build.js), `bench agent`
// (bench/agent-child.ts) and the test that keeps the Kubernetes client off its start-up path
// (node-agent/agent-bundle.test.ts).
//
// Plain JavaScript, koffi (a native addon) left to node_modules. Code reached only through import()
// (the actuator's wiring, node-agent/actuator-runtime.ts, with @kubernetes/client-node) goes into chunks
// of its own beside agent.mjs: bundled into the one file, that code cost ~15 MiB of peak RSS even
// unevaluated, and the agent without GPU_ACTIONS (the default) never runs it (docs/node-agent.md "Memory").
import { join } from 'node:path';

/**
 * @param {string} root the repository
 * @param {string} outdir where agent.mjs and its chunks go (empty it first: chunks are named by hash)
 * @returns {import('esbuild').BuildOptions}
 */
export function agentBuildOptions(root, outdir) {
  return {
    entryPoints: { agent: join(root, 'node-agent', 'main.ts') },
    outdir,
    splitting: true,
    chunkNames: 'chunk-[hash]',
    outExtension: { '.js': '.mjs' },
    bundle: true,
    platform: 'node',
    target: 'node22',
    format: 'esm',
    external: ['koffi'],
    legalComments: 'none',
    // The AWS SDK's and client-node's CommonJS parts call require(): every chunk is a module of its own.
    banner: {
      js:
        "import { createRequire as __gr_createRequire } from 'module'; const require = " +
        '__gr_createRequire(import.meta.url);',
    },
    logLevel: 'warning',
  };
}
