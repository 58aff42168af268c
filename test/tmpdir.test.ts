import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, inject, it } from 'vitest';

/** test/global-setup.ts gives the run one temp folder and removes it at the end. */
describe('temp folders of a test run', () => {
  it('go under the run folder, not loose in the system temp folder', () => {
    const runTmpDir = inject('runTmpDir');
    expect(runTmpDir).toMatch(/gpu-reflex-test-/);
    expect(tmpdir()).toBe(runTmpDir);
    expect(mkdtempSync(join(tmpdir(), 'x-')).startsWith(`${runTmpDir}/`)).toBe(true);
  });

  it('go under the run folder for child processes too', () => {
    const childTmp = execFileSync(process.execPath, ['-p', 'require("node:os").tmpdir()'], { encoding: 'utf8' }).trim();
    expect(childTmp).toBe(inject('runTmpDir'));
  });
});
