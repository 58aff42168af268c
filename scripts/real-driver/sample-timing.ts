/**
 * How long the agent's reads take on a real driver: one whole `sampleDevice` per GPU, and each
 * field's NVML call alone, timed over many rounds (median and p99, microseconds). Read-only.
 *   NVML_LIBRARY_PATH=/path/to/libnvidia-ml.so.1 npx tsx scripts/real-driver/sample-timing.ts [rounds] > timing.json
 */
import { Nvml } from '../../node-agent/nvml/nvml.ts';
import { sampleDevice } from '../../node-agent/nvml/sample.ts';
import { gpuInstanceProfiles } from '../../node-agent/nvml/mig.ts';

const rounds = Number(process.argv[2] ?? 200);
const nvml = Nvml.open();
const us = (f: () => unknown): number => {
  const t = process.hrtime.bigint();
  f();
  return Number(process.hrtime.bigint() - t) / 1000;
};
const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const q = (p: number) => Math.round(s[Math.min(s.length - 1, Math.floor(p * s.length))]! * 10) / 10;
  return { median: q(0.5), p99: q(0.99), max: Math.round(s.at(-1)! * 10) / 10 };
};

const out: Record<string, unknown> = { rounds, gpus: nvml.deviceCount() };
const d = nvml.device(0);
const reads: Record<string, () => unknown> = {
  sampleDevice: () => sampleDevice(nvml, 0),
  utilization: () => d.utilization(),
  memory: () => d.memory(),
  temperatureC: () => d.temperatureC(),
  temperatureLimits: () => d.temperatureLimits(),
  memoryTemperatureC: () => d.memoryTemperatureC(),
  powerW: () => d.powerW(),
  ecc: () => d.ecc(),
  remappedRows: () => d.remappedRows(),
  clockEventReasons: () => d.clockEventReasons(),
  processes: () => d.processes(),
  recoveryAction: () => d.recoveryAction(),
  pcieLink: () => d.pcieLink(),
  fabric: () => d.fabric(),
  sramEcc: () => d.sramEcc(),
  nvlinkErrors: () => d.nvlinkErrors(),
};
for (const [name, read] of Object.entries(reads)) {
  const t: number[] = [];
  for (let i = 0; i < rounds; i++) {
    try {
      t.push(us(read));
    } catch (err) {
      out[name] = { threw: String(err) };
      break;
    }
  }
  if (!out[name]) out[name] = stats(t);
}
// The MIG profile table (read at inventory time, not every sample).
const mig: number[] = [];
for (let i = 0; i < Math.min(rounds, 20); i++) mig.push(us(() => gpuInstanceProfiles(nvml, d)));
out.gpuInstanceProfiles = stats(mig);
nvml.close();
process.stdout.write(JSON.stringify(out, null, 2) + '\n');
