import { mkdtemp, mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { PodResolver, podUidFromCgroup } from './pods.ts';

describe('pod UID from /proc/<pid>/cgroup', () => {
  it.each([
    [
      'cgroup v1',
      '12:pids:/kubepods/burstable/pod7c1e4b52-93a0-4d8e-b6f1-2a9c0e5d7f31/0123abcd\n11:devices:/kubepods/burstable/pod7c1e4b52-93a0-4d8e-b6f1-2a9c0e5d7f31/0123abcd\n',
      '7c1e4b52-93a0-4d8e-b6f1-2a9c0e5d7f31',
    ],
    [
      'cgroup v2 systemd driver',
      '0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod7c1e4b52_93a0_4d8e_b6f1_2a9c0e5d7f31.slice/cri-containerd-4f1e.scope\n',
      '7c1e4b52-93a0-4d8e-b6f1-2a9c0e5d7f31',
    ],
    [
      'cgroup v2 guaranteed QoS',
      '0::/kubepods.slice/kubepods-pod1f2e3d4c_5b6a_4798_8a9b_0c1d2e3f4a5b.slice/cri-containerd-9a.scope\n',
      '1f2e3d4c-5b6a-4798-8a9b-0c1d2e3f4a5b',
    ],
    [
      'cgroup v2 cgroupfs driver',
      '0::/kubepods/besteffort/pod1F2E3D4C-5B6A-4798-8A9B-0C1D2E3F4A5B/abc\n',
      '1f2e3d4c-5b6a-4798-8a9b-0c1d2e3f4a5b',
    ],
  ])('reads the pod UID (%s)', (_name, text, uid) => {
    expect(podUidFromCgroup(text)).toBe(uid);
  });

  it('says nothing for processes outside Kubernetes', () => {
    expect(podUidFromCgroup('0::/user.slice/user-1000.slice/session-3.scope\n')).toBeUndefined();
    expect(podUidFromCgroup('0::/system.slice/nvidia-persistenced.service\n')).toBeUndefined();
  });

  it('never throws on arbitrary text', () => {
    fc.assert(
      fc.property(fc.string(), (s) => {
        podUidFromCgroup(s);
      }),
    );
  });

  it('resolves pids through a proc root and forgets exited ones', async () => {
    const proc = await mkdtemp(join(tmpdir(), 'gr-proc-'));
    await mkdir(join(proc, '42'));
    await writeFile(join(proc, '42', 'cgroup'), '0::/kubepods/besteffort/pod7c1e4b52-93a0-4d8e-b6f1-2a9c0e5d7f31/x\n');
    const res = new PodResolver(proc);
    const m = await res.resolve([42, 43]);
    expect([...m]).toEqual([
      [42, '7c1e4b52-93a0-4d8e-b6f1-2a9c0e5d7f31'],
      [43, undefined],
    ]);
  });
});
