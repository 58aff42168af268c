/**
 * `node --import tsx bench/profile-top.ts FILE.cpuprofile [N]`: the top self-time of a V8 CPU
 * profile (one written by GPU_REFLEX_BENCH_PROFILE_DIR, or `node --cpu-prof`), three ways: by
 * library (the package, or our own top folder, a frame's code lives in), by frame (function and
 * call site), and by our own code's innermost frame on the stack (who asked for that library work).
 * Idle time is left out; shares are of the busy samples.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Profile, ProfileNode } from './cpu-profile.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

function place(url: string): string {
  const path = url.startsWith('file://') ? fileURLToPath(url) : url;
  const nm = path.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const parts = path.slice(nm + '/node_modules/'.length).split('/');
    return parts[0]!.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]!;
  }
  if (path.startsWith(ROOT)) return path.slice(ROOT.length).split('/').slice(0, 3).join('/');
  if (path.startsWith('node:')) return 'node:' + path.slice(5).split('/')[0];
  return path === '' ? '(native/VM)' : path;
}

function site(n: ProfileNode): string {
  const f = n.callFrame;
  const url = f.url.startsWith('file://') ? fileURLToPath(f.url) : f.url;
  const short = url.startsWith(ROOT) ? url.slice(ROOT.length) : url.replace(/.*\/node_modules\//, '');
  return `${f.functionName || '(anonymous)'} ${short}${short ? `:${(f.lineNumber ?? 0) + 1}` : ''}`;
}

const ownCode = (url: string) => url.includes(ROOT) && !url.includes('/node_modules/');

export function topOf(profile: Profile, n = 25): string {
  const byId = new Map(profile.nodes.map((x) => [x.id, x]));
  const parent = new Map<number, number>();
  for (const x of profile.nodes) for (const c of x.children ?? []) parent.set(c, x.id);
  const self = new Map<number, number>();
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  for (let i = 0; i < samples.length; i++)
    self.set(samples[i]!, (self.get(samples[i]!) ?? 0) + (deltas[i] ?? 0) / 1000);
  const lib = new Map<string, number>();
  const frame = new Map<string, number>();
  const caller = new Map<string, number>();
  let busy = 0;
  for (const [id, ms] of self) {
    const x = byId.get(id)!;
    if (x.callFrame.functionName === '(idle)') continue;
    busy += ms;
    const add = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + ms);
    // Natives (no URL) are charged with their nearest caller that has one.
    let u: number | undefined = id;
    while (u !== undefined && !byId.get(u)!.callFrame.url) u = parent.get(u);
    add(lib, u === undefined ? `(${x.callFrame.functionName})` : place(byId.get(u)!.callFrame.url));
    add(frame, `${site(x)}${x.callFrame.url ? '' : u === undefined ? '' : `  ← ${site(byId.get(u)!)}`}`);
    let o: number | undefined = id;
    while (o !== undefined && !ownCode(byId.get(o)!.callFrame.url)) o = parent.get(o);
    add(caller, o === undefined ? '(no own frame: runtime, await continuation, GC)' : site(byId.get(o)!));
  }
  const table = (title: string, m: Map<string, number>) => [
    `\n${title}`,
    ...[...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([k, ms]) => `${((100 * ms) / busy).toFixed(1).padStart(5)} %  ${ms.toFixed(0).padStart(6)} ms  ${k}`),
  ];
  return [
    `busy ${busy.toFixed(0)} ms`,
    ...table('self time by library', lib),
    ...table('self time by frame', frame),
    ...table('self time by innermost own frame', caller),
  ].join('\n');
}

const [file, count] = process.argv.slice(2);
if (file)
  process.stdout.write(topOf(JSON.parse(readFileSync(file, 'utf8')) as Profile, count ? Number(count) : 25) + '\n');
