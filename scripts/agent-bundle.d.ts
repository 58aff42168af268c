import type { BuildOptions } from 'esbuild';
/** The node agent's esbuild options (scripts/agent-bundle.js). */
export function agentBuildOptions(root: string, outdir: string): BuildOptions & { banner: { js: string } };
