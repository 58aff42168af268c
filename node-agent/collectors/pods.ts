/**
 * Which pod a GPU process belongs to: the kubelet puts every container in a cgroup named after the
 * pod UID, so `/proc/<pid>/cgroup` answers without asking the API server.
 *   cgroup v1:            11:devices:/kubepods/burstable/pod7c1e4b52-93a0-4d8e-b6f1-2a9c0e5d7f31/<container>
 *   cgroup v2 (systemd):
 *   0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod7c1e4b52_93a0_….slice/cri-containerd-….scope
 *   cgroup v2 (cgroupfs): 0::/kubepods/besteffort/pod7c1e4b52-93a0-…/<container>
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

const UID = '[0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12}';
const POD_IN_PATH = new RegExp(`(?:^|[/-])pod(${UID})(?:\\.slice)?(?:/|$)`, 'i');

/** The pod UID in a cgroup file's text, or undefined for processes outside Kubernetes. */
export function podUidFromCgroup(text: string): string | undefined {
  for (const line of text.split('\n')) {
    const path = line.split(':').slice(2).join(':');
    const m = POD_IN_PATH.exec(path);
    if (m) return m[1]!.replaceAll('_', '-').toLowerCase();
  }
  return undefined;
}

/** Reads `<procRoot>/<pid>/cgroup`; a process that exited meanwhile simply has no pod. */
export async function podUidOfPid(pid: number, procRoot = '/proc'): Promise<string | undefined> {
  try {
    return podUidFromCgroup(await readFile(join(procRoot, String(pid), 'cgroup'), 'utf8'));
  } catch {
    return undefined;
  }
}

/** Resolves many pids at once, remembering answers: a pid keeps its cgroup for its lifetime. */
export class PodResolver {
  private readonly cache = new Map<number, string | undefined>();
  constructor(private readonly procRoot = '/proc') {}

  async resolve(pids: readonly number[]): Promise<Map<number, string | undefined>> {
    const live = new Set(pids);
    for (const pid of this.cache.keys()) if (!live.has(pid)) this.cache.delete(pid);
    await Promise.all(
      pids.filter((p) => !this.cache.has(p)).map(async (p) => this.cache.set(p, await podUidOfPid(p, this.procRoot))),
    );
    return new Map(pids.map((p) => [p, this.cache.get(p)]));
  }
}
