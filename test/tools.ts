import { spawnSync } from 'node:child_process';

/**
 * Tests that need a tool the machine may lack (kubectl, a Python library, …) ask for it here, so
 * that a missing tool never makes a run pass silently: the tests are skipped *and* the run ends
 * with a loud block (test/not-run-reporter.ts), e.g.
 *
 *   NOT RUN — kubectl missing: 6 tests in test/kubectl.test.ts
 *
 * Use (module level of the test file; the probe runs once, at collection):
 *
 *   const kubectl = requireTool('kubectl', () => commandWorks('kubectl', ['version', '--client']));
 *   describe('kubectl against the simulated cluster', kubectl.options, () => { ... });
 *
 *   // A Python library: Debian installs python3-kubernetes / python3-boto3 for /usr/bin/python3,
 *   // while the `python3` on PATH may be another interpreter (pyenv) without them.
 *   const py = pythonWith('kubernetes');
 *   const pyKube = requireTool('python3-kubernetes', () => py !== undefined);
 *   it('lists nodes with the official Python client', pyKube.options, () => { spawnSync(py!, [...]) });
 *
 * `options` works on `describe` and `it` alike: it carries `skip` and a `meta.notRun` that every
 * test inside inherits, which is what the reporter counts. CI installs what it can (.ci/run).
 */

declare module 'vitest' {
  interface TaskMeta {
    /** Why this test did not run: "<tool> missing". Set by requireTool, read by the reporter. */
    notRun?: string;
  }
}

export interface ToolCheck {
  name: string;
  available: boolean;
  /** Spread or pass as the options argument of `describe` / `it`. */
  options: { skip: boolean; meta: { notRun?: string } };
}

/** Probes once; a probe that throws counts as "missing". */
export function requireTool(name: string, probe: () => boolean): ToolCheck {
  let available: boolean;
  try {
    available = probe();
  } catch {
    available = false;
  }
  return { name, available, options: { skip: !available, meta: available ? {} : { notRun: `${name} missing` } } };
}

/** True when `command args…` starts and exits 0 within 10 s. */
export function commandWorks(command: string, args: string[]): boolean {
  const r = spawnSync(command, args, { stdio: 'ignore', timeout: 10_000 });
  return r.error === undefined && r.status === 0;
}

/** Interpreters tried in order: the system one first, where Debian's python3-* packages live. */
export const PYTHON_CANDIDATES = ['/usr/bin/python3', 'python3'];

/** The first Python interpreter that can `import <module>`, or undefined. */
export function pythonWith(module: string, candidates: readonly string[] = PYTHON_CANDIDATES): string | undefined {
  if (!/^[A-Za-z_][\w.]*$/.test(module)) throw new Error(`pythonWith: "${module}" is not a Python module name`);
  return candidates.find((python) => commandWorks(python, ['-c', `import ${module}`]));
}
