/**
 * Helpers for measuring the agent as a separate process: bundling (the form an image ships),
 * /proc readings (CPU ticks, peak RSS), and bus receipt times.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { LocalBus } from '../infra/local/bus/index.ts';

/** utime + stime of a process in seconds (fields 14 and 15 of /proc/<pid>/stat, in clock ticks). */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name (field 2) may hold spaces: count fields after its closing parenthesis.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / clockTicks();
}

let ticks: number | undefined;
function clockTicks(): number {
  if (ticks === undefined) {
    try {
      ticks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticks = 100;
    }
  }
  return ticks;
}

/** Peak resident set size in MiB (VmHWM: the high-water mark since the process started). */
export function peakRssMiB(pid: number): number {
  const m = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no VmHWM in /proc/${pid}/status`);
  return Number(m[1]) / 1024;
}

/**
 * Bundles the agent command and the XID injector with esbuild into `.build/bench/`, as a
 * container image would run them: the options `npm run build` ships (scripts/agent-bundle.js: plain
 * JavaScript, the actuator's Kubernetes client in a chunk only GPU_ACTIONS loads), no TypeScript
 * loader in the process (tsx keeps a loader thread with its own V8 heap, ~35 MiB).
 */
export async function bundleAgent(root: string): Promise<{ agent: string; injector: string }> {
  const { build } = await import('esbuild');
  const { agentBuildOptions } = await import('../scripts/agent-bundle.js');
  const out = join(root, '.build', 'bench');
  const agentDir = join(out, 'node-agent');
  await rm(agentDir, { recursive: true, force: true });
  await mkdir(out, { recursive: true });
  const options = agentBuildOptions(root, agentDir);
  await build({ ...options, logLevel: 'error' });
  const injector = join(out, 'xid-injector.mjs');
  await build({
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    external: ['koffi'],
    logLevel: 'error',
    banner: options.banner,
    entryPoints: [join(root, 'bench', 'agent-xid-injector.ts')],
    outfile: injector,
  });
  return { agent: join(agentDir, 'agent.mjs'), injector };
}

/**
 * Records when each bus event arrived, in CLOCK_MONOTONIC nanoseconds. The bus runs in this
 * process, so a 1 ms poll of its event list sees an accepted PutEvents within about a
 * millisecond (the resolution of the latency numbers).
 */
export function watchReceipts(bus: LocalBus): { at: bigint[]; stop(): void } {
  const at: bigint[] = [];
  const timer = setInterval(() => {
    const n = bus.events.length;
    if (n > at.length) {
      const now = process.hrtime.bigint();
      while (at.length < n) at.push(now);
    }
  }, 1);
  return { at, stop: () => clearInterval(timer) };
}
