/**
 * `node --import tsx bench/remediation-child.ts SPEC_JSON OUT_FILE`: one remediation bench run in
 * its own process (see remediation-run.ts for why), progress on stderr, the result as JSON in
 * OUT_FILE. Also the way to profile a run: `node --cpu-prof --import tsx bench/remediation-child.ts …`.
 */
import { writeFileSync } from 'node:fs';
import { runRemediationBench, type RunSpec } from './remediation-run.ts';

const [specJson, out] = process.argv.slice(2);
if (!specJson || !out) {
  process.stderr.write('usage: remediation-child.ts SPEC_JSON OUT_FILE\n');
  process.exit(2);
}
const result = await runRemediationBench(JSON.parse(specJson) as RunSpec, (line) => process.stderr.write(`${line}\n`));
writeFileSync(out, JSON.stringify(result));
