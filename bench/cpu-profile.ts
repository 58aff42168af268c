/**
 * Where a benchmark's CPU goes, by part of the stack: the V8 sampling profiler of this process
 * (node:inspector, the same data as `node --cpu-prof`), each sample charged to the innermost frame
 * that belongs to this repository — so JSON.stringify called from the simulator's server counts as
 * the simulator, and client-node called from a function as the function. Samples with no such
 * frame (an `await` continuation inside a library, HTTP parsing, GC) are charged by their own
 * frame's package, or to "runtime".
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

export interface ProfileNode {
  id: number;
  callFrame: { url: string; functionName: string; lineNumber?: number; columnNumber?: number };
  children?: number[];
}
export interface Profile {
  nodes: ProfileNode[];
  samples?: number[];
  timeDeltas?: number[];
}

/** Parts of the stack, in the order reports list them. */
export const PARTS = [
  'simulated cluster',
  'functions',
  'local bus',
  'AWS SDK',
  'bench harness',
  'runtime, HTTP, GC',
] as const;
export type Part = (typeof PARTS)[number];

function pathOf(url: string): string {
  return url.startsWith('file://') ? fileURLToPath(url) : url;
}

/** The part a frame belongs to when it is our own code; undefined for libraries and the runtime. */
function ownPart(url: string): Part | undefined {
  const path = pathOf(url);
  if (!path.startsWith(ROOT) || path.includes('/node_modules/')) return undefined;
  const rel = path.slice(ROOT.length);
  if (rel.startsWith('infra/local/kube/')) return 'simulated cluster';
  if (rel.startsWith('functions/') || rel.startsWith('events/')) return 'functions';
  if (rel.startsWith('infra/local/bus/')) return 'local bus';
  return 'bench harness';
}

/** A library frame's part when no own frame is on the stack (after an await inside the library). */
function libraryPart(url: string): Part {
  if (url.includes('/node_modules/@kubernetes/')) return 'functions';
  if (url.includes('/node_modules/@aws-sdk/') || url.includes('/node_modules/@smithy/')) return 'AWS SDK';
  return 'runtime, HTTP, GC';
}

export interface CpuShares {
  /** Milliseconds of CPU per part (idle excluded). */
  ms: Record<Part, number>;
  /** All non-idle CPU sampled, ms. */
  total: number;
}

/** Charges each sample of `profile` to a part. */
export function sharesOf(profile: Profile): CpuShares {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const cache = new Map<number, Part | 'idle'>();
  const partOf = (id: number): Part | 'idle' => {
    const hit = cache.get(id);
    if (hit) return hit;
    const leaf = byId.get(id)!;
    let part: Part | 'idle' | undefined = leaf.callFrame.functionName === '(idle)' ? 'idle' : undefined;
    for (let cur: number | undefined = id; part === undefined && cur !== undefined; cur = parent.get(cur))
      part = ownPart(byId.get(cur)!.callFrame.url);
    if (part === undefined) {
      // Innermost frame with a URL (natives have none) names the library.
      let url = '';
      for (let cur: number | undefined = id; url === '' && cur !== undefined; cur = parent.get(cur))
        url = byId.get(cur)!.callFrame.url;
      part = libraryPart(url);
    }
    cache.set(id, part);
    return part;
  };
  const ms = Object.fromEntries(PARTS.map((p) => [p, 0])) as Record<Part, number>;
  let total = 0;
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  for (let i = 0; i < samples.length; i++) {
    const part = partOf(samples[i]!);
    // timeDeltas[i] is the time since the previous sample: it belongs to sample i.
    const dt = (deltas[i] ?? 0) / 1000;
    if (part === 'idle') continue;
    ms[part] += dt;
    total += dt;
  }
  return { ms, total };
}

/**
 * Where raw profiles go: with GPU_REFLEX_BENCH_PROFILE_DIR set, stop() also writes the whole V8
 * profile there as `<label>-<pid>.cpuprofile` (Chrome DevTools, speedscope, bench/profile-top.ts
 * read it): the shares say which part of the stack, the raw profile says which call site.
 */
const PROFILE_DIR = process.env['GPU_REFLEX_BENCH_PROFILE_DIR'];

/** Starts sampling this process every `intervalUs`; the returned stop() gives the shares. */
export async function startCpuProfile(intervalUs = 1000, label = 'bench'): Promise<{ stop(): Promise<CpuShares> }> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: intervalUs });
  await session.post('Profiler.start');
  return {
    async stop() {
      const { profile } = (await session.post('Profiler.stop')) as unknown as { profile: Profile };
      session.disconnect();
      if (PROFILE_DIR) writeFileSync(join(PROFILE_DIR, `${label}-${process.pid}.cpuprofile`), JSON.stringify(profile));
      return sharesOf(profile);
    },
  };
}
