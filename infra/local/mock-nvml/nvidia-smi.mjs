#!/usr/bin/env node
/**
 * The local stack's `nvidia-smi`, for what the node agent's actuator asks of it:
 * `nvidia-smi --gpu-reset -i <GPU UUID>`. It reaches the mock NVML library loaded by the agent of
 * the same node through the scenario's `controlDir` (infra/local/mock-nvml/src/control-dir.c):
 * writes a request, waits for the library's answer (the agent calls NVML all the time), and says
 * what nvidia-smi says. Exit 0 when the GPU was reset; 255 when it is in use or did not come back;
 * 2 for a bad command line. Found through $MOCK_NVML_SCENARIO, like the library itself.
 */
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const USAGE =
  'usage: nvidia-smi --gpu-reset -i <GPU UUID> | -i <GPU UUID> -pm 0|1 | -i <GPU UUID> ' +
  "--query-gpu=persistence_mode --format=csv,noheader   (the gpu-reflex local stack's mock)";
const args = process.argv.slice(2);
const i = args.indexOf('-i');
const uuid = i >= 0 ? args[i + 1] : undefined;
const pm = args.indexOf('-pm');
const query = args.includes('--query-gpu=persistence_mode');
if ((!args.includes('--gpu-reset') && pm < 0 && !query) || !uuid) {
  process.stderr.write(`${USAGE}\n`);
  process.exit(2);
}
const scenarioPath = process.env.MOCK_NVML_SCENARIO;
if (!scenarioPath) {
  process.stderr.write('nvidia-smi (mock): MOCK_NVML_SCENARIO is not set: which mock GPU box is this?\n');
  process.exit(255);
}
const scenario = JSON.parse(readFileSync(scenarioPath, 'utf8'));
const dir = scenario.controlDir;
if (!dir) {
  process.stderr.write(
    `nvidia-smi (mock): ${scenarioPath} names no controlDir: no agent can be asked to reset a GPU\n`,
  );
  process.exit(255);
}
const gpu = (scenario.gpus ?? []).find((g) => g.uuid === uuid);
const bus = gpu?.pciBusId ?? gpu?.busId ?? uuid;
if (pm >= 0 || query) persistenceMode();
const id = `${process.pid}-${Date.now()}`;
writeFileSync(join(dir, `.${id}.tmp`), `reset ${uuid}\n`);
renameSync(join(dir, `.${id}.tmp`), join(dir, `${id}.req`));
const res = join(dir, `${id}.res`);
const deadline = Date.now() + Number(process.env.MOCK_NVIDIA_SMI_TIMEOUT_MS ?? 30_000);
const sleep = new Int32Array(new SharedArrayBuffer(4));
while (!existsSync(res)) {
  if (Date.now() > deadline) {
    rmSync(join(dir, `${id}.req`), { force: true });
    process.stderr.write(`GPU ${bus}: no answer from the mock NVML library (is the node's agent running?)\n`);
    process.exit(255);
  }
  Atomics.wait(sleep, 0, 0, 20);
}
const [rc, ...words] = readFileSync(res, 'utf8').trim().split(' ');
rmSync(res, { force: true });
const said = words.join(' ');
if (rc === '0') {
  process.stdout.write(`GPU ${bus} was successfully reset.\n`);
  process.exit(0);
}
// nvmlErrorString's words for the codes the mock answers (nvml.h: 3 NOT_SUPPORTED, 6 NOT_FOUND, 19 IN_USE).
const why =
  rc === '19' ? 'In use by another client' : rc === '6' ? 'Not Found' : rc === '3' ? 'Not Supported' : 'Unknown Error';
process.stderr.write(`The following GPUs could not be reset:\n  GPU ${bus}: ${why} (${said})\n`);
process.exit(255);

/**
 * Persistence mode, per GPU, in `persistence.json` beside the node's controlDir (the library does not
 * model it): on by default, as on a node where the GPU Operator's driver runs nvidia-persistenced.
 * `-pm 1|0` sets it ("Enabled/Disabled persistence mode for GPU …", nvidia-smi's words); the query
 * prints `Enabled` or `Disabled`.
 */
function persistenceMode() {
  if (!gpu) {
    process.stderr.write(`No devices were found matching ${uuid}\n`);
    process.exit(6);
  }
  const file = join(dir, '..', 'persistence.json');
  const state = existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : {};
  if (query) {
    process.stdout.write(`${state[uuid] === false ? 'Disabled' : 'Enabled'}\n`);
    process.exit(0);
  }
  const on = args[pm + 1] === '1';
  if (args[pm + 1] !== '0' && args[pm + 1] !== '1') {
    process.stderr.write(`${USAGE}\n`);
    process.exit(2);
  }
  state[uuid] = on;
  writeFileSync(`${file}.tmp`, JSON.stringify(state));
  renameSync(`${file}.tmp`, file);
  process.stdout.write(`${on ? 'Enabled' : 'Disabled'} persistence mode for GPU ${bus}.\n`);
  process.exit(0);
}
