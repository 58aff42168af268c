import path from 'node:path';
import type { Reporter, TestModule } from 'vitest/node';

/**
 * Ends a run with a loud block naming every test that did not run because a tool was missing
 * (tests marked by test/tools.ts `requireTool`). Listed after 'default' in vitest.config.ts, so it
 * prints below the summary, where a reader of a green run looks last.
 */

export interface SkippedTest {
  file: string;
  notRun: string;
}

/** One line per (reason, file), in a stable order: "NOT RUN — kubectl missing: 6 tests in test/kubectl.test.ts". */
export function notRunLines(skipped: readonly SkippedTest[]): string[] {
  const counts = new Map<string, { notRun: string; file: string; n: number }>();
  for (const s of skipped) {
    const key = `${s.notRun}\0${s.file}`;
    const entry = counts.get(key) ?? { notRun: s.notRun, file: s.file, n: 0 };
    entry.n += 1;
    counts.set(key, entry);
  }
  return [...counts.values()]
    .sort((a, b) => a.notRun.localeCompare(b.notRun) || a.file.localeCompare(b.file))
    .map(({ notRun, file, n }) => `NOT RUN — ${notRun}: ${n} ${n === 1 ? 'test' : 'tests'} in ${file}`);
}

/** The framed block, or '' when everything ran. */
export function notRunBlock(skipped: readonly SkippedTest[]): string {
  const lines = notRunLines(skipped);
  if (lines.length === 0) return '';
  const body = [...lines, 'These tests were skipped, not passed: install the tools named (see .ci/run).'];
  const bar = '!'.repeat(Math.max(...body.map((l) => l.length)));
  return ['', bar, ...body, bar, ''].join('\n');
}

/** Skipped tests that carry a notRun reason. */
export function skippedForMissingTools(modules: ReadonlyArray<TestModule>): SkippedTest[] {
  const out: SkippedTest[] = [];
  for (const module of modules) {
    for (const test of module.children.allTests()) {
      const notRun = test.meta().notRun;
      if (notRun !== undefined && test.result().state === 'skipped') {
        out.push({ file: path.relative(module.project.config.root, module.moduleId), notRun });
      }
    }
  }
  return out;
}

export default class NotRunReporter implements Reporter {
  private readonly write: (text: string) => void;

  /** vitest passes the reporter's options object (empty unless configured); tests pass `write`. */
  constructor(options: { write?: (text: string) => void } = {}) {
    this.write = options.write ?? ((t) => process.stdout.write(t));
  }

  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    const block = notRunBlock(skippedForMissingTools(modules));
    if (block !== '') this.write(`${block}\n`);
  }
}
