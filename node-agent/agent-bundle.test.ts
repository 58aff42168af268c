/**
 * The shipped agent (scripts/agent-bundle.js, as `npm run build` and `bench agent` bundle it) loads the
 * Kubernetes client only when GPU_ACTIONS is on: the client is most of the agent's memory, and the
 * agent's peak RSS target (< 100 MiB, `bench agent`) holds only while it stays out of what node
 * evaluates at start-up. A static import of @kubernetes/client-node, node-agent/actuator-runtime.ts or
 * node-agent/actuator/ports.ts anywhere on main.ts's path puts it back and fails this.
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Metafile } from 'esbuild';
import { describe, expect, it } from 'vitest';
import { agentBuildOptions } from '../scripts/agent-bundle.js';

const root = fileURLToPath(new URL('..', import.meta.url));

/** The outputs node evaluates when it imports `entry`: it and every chunk it imports statically. */
function staticallyLoaded(meta: Metafile, entry: string): Set<string> {
  const seen = new Set([entry]);
  for (const out of seen)
    for (const i of meta.outputs[out]!.imports) if (i.kind === 'import-statement' && !i.external) seen.add(i.path);
  return seen;
}

describe('the agent bundle', () => {
  it('keeps @kubernetes/client-node and the actuator wiring in chunks that only import() loads', async () => {
    const { metafile } = await build({
      ...agentBuildOptions(root, join(root, '.build', 'test-agent-bundle')),
      write: false,
      metafile: true,
      logLevel: 'silent',
    });
    const entry = Object.keys(metafile.outputs).find((o) => o.endsWith('/agent.mjs'))!;
    const inputsOf = (outs: Iterable<string>) => [...outs].flatMap((o) => Object.keys(metafile.outputs[o]!.inputs));
    const isHeld = (i: string) =>
      i.includes('node_modules/@kubernetes/client-node/') || i === 'node-agent/actuator-runtime.ts';
    // Not vacuous: the bundle has them, in files of their own.
    expect(inputsOf(Object.keys(metafile.outputs)).filter(isHeld).length).toBeGreaterThan(1);
    expect(inputsOf(staticallyLoaded(metafile, entry)).filter(isHeld)).toEqual([]);
    // The PodResources gRPC client (node:http2, its decoder) loads only once the kubelet's socket exists.
    const isClient = (i: string) => /^node-agent\/collectors\/pod-resources(-wire)?\.ts$/.test(i);
    expect(inputsOf(Object.keys(metafile.outputs)).filter(isClient).sort()).toEqual([
      'node-agent/collectors/pod-resources-wire.ts',
      'node-agent/collectors/pod-resources.ts',
    ]);
    expect(inputsOf(staticallyLoaded(metafile, entry)).filter(isClient)).toEqual([]);
  }, 60_000);
});
