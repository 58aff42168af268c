#!/usr/bin/env node
/**
 * The local stack's `dcgmi`, for what the node agent's probe asks of it: `dcgmi diag -r <1|2|3> -i <index> -j`.
 * It answers from the node's mock scenario file ($MOCK_NVML_SCENARIO, like the mock library and nvidia-smi): the
 * GPU's `dcgmDiag` — `pass` (the default), `fail` (the Memtest plugin fails on it), or `no-host-engine` (DCGM's
 * host engine is not running: dcgmi prints its connection error and no JSON). Written from NVIDIA's DCGM user guide
 * ("DCGM Diagnostics": run levels, `-j`) and DCGM 4's JSON schema (NVIDIA/DCGM testing/python3/dcgm_diag_schema.json:
 * "DCGM Diagnostic" → test_categories → tests { name, results { entity_group, entity_id, status }, test_summary });
 * exit 0 when every test passed, non-zero when one failed (dcgmi/Diag.cpp returns the failure). Nothing of
 * gpu-reflex is imported: the agent reads this as it would read the real tool's output.
 */
import { readFileSync } from 'node:fs';

const args = process.argv.slice(2);
const at = (flag) => {
  const i = args.indexOf(flag);
  return i >= 0 ? args[i + 1] : undefined;
};
const level = Number(at('-r'));
const index = Number(at('-i'));
if (args[0] !== 'diag' || ![1, 2, 3].includes(level) || !Number.isInteger(index) || !args.includes('-j')) {
  process.stderr.write("usage: dcgmi diag -r 1|2|3 -i <GPU index> -j   (the gpu-reflex local stack's mock)\n");
  process.exit(2);
}
const scenarioPath = process.env.MOCK_NVML_SCENARIO;
if (!scenarioPath) {
  process.stderr.write('dcgmi (mock): MOCK_NVML_SCENARIO is not set: which mock GPU box is this?\n');
  process.exit(255);
}
const scenario = JSON.parse(readFileSync(scenarioPath, 'utf8'));
const gpu = (scenario.gpus ?? [])[index];
const verdict = gpu?.dcgmDiag ?? 'pass';
if (verdict === 'no-host-engine') {
  process.stdout.write('Error: unable to establish a connection to the specified host: localhost\n');
  process.exit(255);
}
// The tests each run level adds (DCGM user guide: r1 deployment checks, r2 adds the short hardware tests, r3 the
// longer stress tests).
const tests = [
  ['Deployment', 'Denylist', 1],
  ['Deployment', 'Persistence Mode', 1],
  ['Hardware', 'Memory', 2],
  ['Integration', 'PCIe', 2],
  ['Hardware', 'Memtest', 3],
  ['Stress', 'Targeted Stress', 3],
].filter(([, , from]) => from <= level);
const fails = (name) => gpu !== undefined && verdict === 'fail' && (name === 'Memtest' || name === 'Memory');
const categories = [...new Set(tests.map(([c]) => c))].map((category) => ({
  category,
  tests: tests
    .filter(([c]) => c === category)
    .map(([, name]) => {
      const status = gpu === undefined ? 'Skip' : fails(name) ? 'Fail' : 'Pass';
      return {
        name,
        results: [{ entity_group: 'GPU', entity_group_id: 1, entity_id: index, status }],
        test_summary: { status },
      };
    }),
}));
process.stdout.write(
  JSON.stringify({ 'DCGM Diagnostic': { test_categories: categories }, metadata: { version: '4.2.3' } }, null, 2) +
    '\n',
);
process.exit(categories.some((c) => c.tests.some((t) => t.test_summary.status === 'Fail')) ? 226 : 0);
