/**
 * What the agent's NVML binding reads on a real driver, as one JSON document on stdout. Read-only:
 * it changes no MIG mode, clock, drain state or reset, and registers an event set only to wait on it.
 *
 * Two layers, so a difference can be placed:
 * - `agent`: through the agent's own code (Nvml, sampleDevice, inventory, gpuInstanceProfiles, the
 *   event watcher), exactly what `gpu-reflex agent` would see;
 * - `raw`: each NVML call the agent makes or could make, with its return code, through koffi
 *   directly (temperature thresholds, field values, PCIe link, fabric, profile names by NVML).
 *
 * Run it on a GPU node (docs/node-agent.md, "To verify on a real driver"):
 *   NVML_LIBRARY_PATH=/path/to/libnvidia-ml.so.1 npx tsx scripts/real-driver/nvml-probe.ts > probe.json
 * and compare with `python3 scripts/real-driver/pynvml-probe.py` (NVIDIA's own Python binding).
 */
import { Nvml } from '../../node-agent/nvml/nvml.ts';
import { sampleDevice } from '../../node-agent/nvml/sample.ts';
import { inventory } from '../../node-agent/nvml/inventory.ts';
import { gpuInstanceProfiles } from '../../node-agent/nvml/mig.ts';
import { NVML_EVENT } from '../../node-agent/nvml/events.ts';
import { rawProbe } from './nvml-raw.ts';

const jsonSafe = (_k: string, v: unknown) => (typeof v === 'bigint' ? v.toString() : v);

async function main(): Promise<void> {
  const out: Record<string, unknown> = { startedAt: new Date().toISOString() };
  const nvml = Nvml.open();
  out.libraryPath = nvml.lib.path;
  const agent: Record<string, unknown> = {};
  out.agent = agent;
  const attempt = (name: string, read: () => unknown) => {
    try {
      agent[name] = read();
    } catch (err) {
      agent[name] = { threw: String(err) };
    }
  };
  attempt('inventory', () => inventory(nvml));
  const count = nvml.deviceCount();
  attempt('samples', () => Array.from({ length: count }, (_, i) => sampleDevice(nvml, i)));
  attempt('migProfiles', () => Array.from({ length: count }, (_, i) => gpuInstanceProfiles(nvml, nvml.device(i))));
  try {
    const watcher = nvml.events(NVML_EVENT.xidCriticalError | NVML_EVENT.doubleBitEcc | NVML_EVENT.singleBitEcc);
    agent.events = { registered: watcher.registered.map((r) => r.index), skipped: watcher.skipped };
    const started = performance.now();
    const got = await watcher.wait(500);
    agent.events = { ...(agent.events as object), waitedMs: Math.round(performance.now() - started), got };
    await watcher.close();
  } catch (err) {
    agent.events = { threw: String(err) };
  }

  // Raw calls, each with its return code (nvml-raw.ts).
  const { raw, structSizes } = rawProbe(nvml, count);
  out.raw = raw;
  out.structSizes = structSizes;
  nvml.close();
  process.stdout.write(JSON.stringify(out, jsonSafe, 2) + '\n');
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
