/**
 * `bench deploy`: what a Lambda cold start pays for each function's bundle (issue #16). Sizes of the
 * artifacts `npm run build` writes (what `package.artifact` ships: the .mjs files, not the source
 * maps), and module initialisation — the import of the bundle in a fresh node process — beside a
 * bare `@aws-sdk/client-eventbridge` import measured in the same rounds, interleaved, so machine
 * load falls on both alike. The ratio is per round, then the median of the rounds.
 */
import { execFile } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { below, info, percentile, type BenchSuite, type Measurement } from './harness.ts';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../', import.meta.url));
const ROUNDS = 9;
const MAX_BYTES = 1_500_000;

/** Bytes a function's artifact unpacks to: every file of its build but the source maps. */
export function artifactBytes(dir: string): number {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && !e.name.endsWith('.map'))
    .reduce((n, e) => n + statSync(join(e.parentPath, e.name)).size, 0);
}

async function importMs(spec: string): Promise<number> {
  const { stdout } = await run(process.execPath, [join(root, 'bench/deploy-init.mjs'), spec], { cwd: root, env: { PATH: process.env.PATH, AWS_REGION: 'us-east-1' } });
  return Number(stdout.trim());
}

export const deploySuite: BenchSuite = {
  name: 'deploy',
  summary: 'function artifacts: unpacked size, module init beside a bare EventBridge-client import',
  async run(progress) {
    progress('npm run build');
    await run(process.execPath, [join(root, 'scripts/build.js')], { cwd: root });
    const dir = join(root, '.build/functions');
    const names = readdirSync(dir).filter((n) => statSync(join(dir, n)).isDirectory()).sort();
    const rows: Measurement[] = names.map((n) => below(`${n}: artifact unpacked`, artifactBytes(join(dir, n)) / 1e6, 'MB', MAX_BYTES / 1e6));
    const bare: number[] = [];
    const ratios = new Map<string, number[]>(names.map((n) => [n, []]));
    const inits = new Map<string, number[]>(names.map((n) => [n, []]));
    for (let r = 0; r < ROUNDS; r++) {
      progress(`init round ${r + 1} of ${ROUNDS}`);
      const b = await importMs('@aws-sdk/client-eventbridge');
      bare.push(b);
      for (const n of names) {
        const ms = await importMs(pathToFileURL(join(dir, n, 'index.mjs')).href);
        inits.get(n)!.push(ms);
        ratios.get(n)!.push(ms / b);
      }
    }
    rows.push(info('bare @aws-sdk/client-eventbridge import (median)', percentile(bare, 50), 'ms'));
    for (const n of names) {
      rows.push(info(`${n}: module init (median)`, percentile(inits.get(n)!, 50), 'ms'));
      const ratio = percentile(ratios.get(n)!, 50);
      rows.push({ metric: `${n}: init ÷ bare client import (median)`, value: ratio, unit: '×', target: '≤ 1.0 ×', ok: ratio <= 1 });
    }
    return rows;
  },
};
