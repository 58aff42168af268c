import { describe, expect, it } from 'vitest';
import type { TestModule } from 'vitest/node';
import NotRunReporter, { notRunLines, skippedForMissingTools } from './not-run-reporter.ts';
import { commandWorks, pythonWith, requireTool } from './tools.ts';

describe('requireTool', () => {
  it('skips and marks the tests when the probe says no', () => {
    const tool = requireTool('kubectl', () => false);
    expect(tool).toEqual({
      name: 'kubectl',
      available: false,
      options: { skip: true, meta: { notRun: 'kubectl missing' } },
    });
  });

  it('counts a probe that throws as missing', () => {
    expect(
      requireTool('gcc', () => {
        throw new Error('ENOENT');
      }).options.skip,
    ).toBe(true);
  });

  it('runs the tests and marks nothing when the tool is there', () => {
    expect(requireTool('node', () => true).options).toEqual({ skip: false, meta: {} });
  });
});

describe('probes', () => {
  it('commandWorks is true for a command that exits 0 and false for one that is not installed', () => {
    expect(commandWorks(process.execPath, ['-e', ''])).toBe(true);
    expect(commandWorks(process.execPath, ['-e', 'process.exit(3)'])).toBe(false);
    expect(commandWorks('gpu-reflex-no-such-tool', [])).toBe(false);
  });

  it('pythonWith skips interpreters that lack the module and refuses a non-module name', () => {
    expect(pythonWith('sys', ['/nonexistent/python3'])).toBeUndefined();
    expect(() => pythonWith('os; import shutil')).toThrow('"os; import shutil" is not a Python module name');
  });
});

/** Just enough of vitest's TestModule for the reporter: tests with meta and a result state. */
function fakeModule(moduleId: string, tests: { notRun?: string; state: 'passed' | 'skipped' }[]): TestModule {
  return {
    moduleId,
    project: { config: { root: '/repo' } },
    children: {
      *allTests() {
        for (const t of tests)
          yield {
            meta: () => (t.notRun === undefined ? {} : { notRun: t.notRun }),
            result: () => ({ state: t.state }),
          };
      },
    },
  } as unknown as TestModule;
}

describe('the NOT RUN block', () => {
  it('counts the skipped tests per missing tool and file', () => {
    const modules = [
      fakeModule(
        '/repo/test/kubectl.test.ts',
        Array.from({ length: 6 }, () => ({ notRun: 'kubectl missing', state: 'skipped' as const })),
      ),
      fakeModule('/repo/test/py.test.ts', [{ notRun: 'python3-boto3 missing', state: 'skipped' }, { state: 'passed' }]),
    ];
    expect(notRunLines(skippedForMissingTools(modules))).toEqual([
      'NOT RUN — kubectl missing: 6 tests in test/kubectl.test.ts',
      'NOT RUN — python3-boto3 missing: 1 test in test/py.test.ts',
    ]);
  });

  it('leaves out tests that ran, and tests skipped for other reasons', () => {
    const modules = [
      fakeModule('/repo/a.test.ts', [{ notRun: 'kubectl missing', state: 'passed' }, { state: 'skipped' }]),
    ];
    expect(skippedForMissingTools(modules)).toEqual([]);
  });

  it('is printed at the end of a run that skipped for a missing tool, and nothing is printed otherwise', () => {
    let out = '';
    const reporter = new NotRunReporter({
      write: (t) => {
        out += t;
      },
    });
    reporter.onTestRunEnd([
      fakeModule('/repo/test/kubectl.test.ts', [{ notRun: 'kubectl missing', state: 'skipped' }]),
    ]);
    expect(out).toContain('NOT RUN — kubectl missing: 1 test in test/kubectl.test.ts');
    expect(out).toContain('skipped, not passed');
    out = '';
    reporter.onTestRunEnd([fakeModule('/repo/test/kubectl.test.ts', [{ state: 'passed' }])]);
    expect(out).toBe('');
  });
});
