import { join } from 'node:path';
import { expect } from 'vitest';
import { loadScenario } from '../../infra/local/scenario.ts';
import { startStack, type StackResult } from '../../infra/local/stack.ts';
import { REPO_ROOT } from '../../infra/local/stack-env.ts';

/** Runs `infra/local/scenarios/<file>` as `gpu-reflex simulate` does, its timeline lines pushed to `lines`. */
export async function simulateScenario(file: string, lines: string[]): Promise<StackResult> {
  const scenario = loadScenario(join(REPO_ROOT, 'infra/local/scenarios', file));
  return (await startStack(scenario, { clock: 'virtual', out: (l) => void lines.push(l) })).run();
}

/** Seconds into the scenario of the first timeline line matching `re` (its `mm:ss.s` stamp); fails when none does. */
export function lineAt(lines: readonly string[], re: RegExp): number {
  const line = lines.find((l) => re.test(l));
  expect(line, `no timeline line matches ${re}`).toBeDefined();
  const [m, s] = line!.trim().split(/\s+/)[0]!.split(':').map(Number);
  return m! * 60 + s!;
}
