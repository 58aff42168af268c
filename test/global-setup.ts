import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { buildMockNvml } from '../infra/local/mock-nvml/build.ts';

declare module 'vitest' {
  interface ProvidedContext {
    /** The folder every temp file of this run goes under (TMPDIR); removed when the run ends. */
    runTmpDir: string;
  }
}

/**
 * Runs once before the suite. Native fixtures that tests need (the mock NVML library) are built
 * here into the git-ignored `.build/` folder, so a fresh clone needs nothing but `npm ci`.
 *
 * Temp folders: the run gets one folder and TMPDIR points at it, so everything a test or a child
 * process it starts makes with os.tmpdir() / mkdtemp lands there, and the teardown removes it
 * whole. Tests still clean up after themselves where they can; this is the guarantee that a run
 * (a failed or a timed-out test included) leaves nothing in /tmp. Workers start after this, so
 * they inherit TMPDIR.
 */
export default async function setup(project: TestProject): Promise<() => void> {
  await buildMockNvml();
  const runTmpDir = mkdtempSync(join(tmpdir(), 'gpu-reflex-test-'));
  const previous = process.env.TMPDIR;
  process.env.TMPDIR = runTmpDir;
  project.provide('runTmpDir', runTmpDir);
  return () => {
    if (previous === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = previous;
    rmSync(runTmpDir, { recursive: true, force: true });
  };
}
