import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { kubeletLogPodNames } from './pod-names.ts';

const UID_A = '7c1e4b52-93a0-4d8e-b6f1-2a9c0e5d7f31';
const UID_B = '0b4f3a9e-1111-4d8e-b6f1-2a9c0e5d7f32';

describe('kubeletLogPodNames', () => {
  it("names pods by UID from the kubelet's log directories, with the container when there is one", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pods-'));
    mkdirSync(join(dir, `ml-training_llama-ft-worker-3_${UID_A}`, 'trainer'), { recursive: true });
    mkdirSync(join(dir, `research_notebook-0_${UID_B}`, 'jupyter'), { recursive: true });
    mkdirSync(join(dir, `research_notebook-0_${UID_B}`, 'sidecar'), { recursive: true });
    mkdirSync(join(dir, 'not-a-pod-dir'));
    const names = await kubeletLogPodNames(dir).lookup([UID_A, UID_B, '00000000-0000-4000-8000-000000000000']);
    expect(Object.fromEntries(names)).toEqual({
      [UID_A]: { namespace: 'ml-training', pod: 'llama-ft-worker-3', container: 'trainer' },
      [UID_B]: { namespace: 'research', pod: 'notebook-0' },
    });
  });

  it('gives no names, and no error, when the directory is not there', async () => {
    expect((await kubeletLogPodNames('/nonexistent/var/log/pods').lookup([UID_A])).size).toBe(0);
  });
});
