import type { Command } from '../../events/cli-kit/command.ts';
import { parseFlags } from '../../events/cli-kit/flags.ts';
import { oneLine } from '../../events/cli-kit/phrases.ts';
import { ConfigError, loadAgentConfig } from '../config.ts';
import { EXIT, runAgent } from '../agent-runtime.ts';

const HELP = `Usage: gpu-reflex agent [--once] [--dry-run]

Runs the node agent: samples every GPU through NVML (health crossings, utilization
summaries, inventory with the pods on each GPU), waits for NVML events (XIDs, ECC, DRAM
retirement, recovery action) and follows the kernel log for XIDs, and publishes events to
the EventBridge bus (batched, retried, spooled to disk while the bus is unreachable).
Serves /healthz (degraded: 503 with its reasons), /livez and /metrics on HTTP_PORT.
SIGTERM or SIGINT: flush, close, exit 0.

Options:
  --once      take one sample and the inventory, publish (or print) them, exit:
              a quick check of a node by hand
  --dry-run   print each event as a JSON line on stdout instead of publishing
              (no bus, no spool); logs go to stderr

Environment (full table with defaults: docs/node-agent.md):
  NODE_NAME, EVENT_BUS_NAME, AWS_REGION, AWS_ENDPOINT_URL_EVENTBRIDGE, NVML_LIBRARY_PATH,
  SAMPLE_INTERVAL_MS, UTILIZATION_WINDOW_MS, INVENTORY_INTERVAL_MS, GPU_UTIL_HIGH_PERCENT,
  GPU_UTIL_HIGH_FOR_MS, FB_USED_HIGH_PERCENT, TEMP_WARN_C, TEMP_CRIT_C, POWER_HIGH_PERCENT,
  HYSTERESIS_PERCENT, SPOOL_PATH, SPOOL_MAX_BYTES, DEAD_LETTER_PATH, BATCH_DELAY_MS,
  PUBLISH_MAX_ATTEMPTS, PUBLISH_PROBE_INTERVAL_MS, HTTP_PORT, KMSG_PATH, KMSG_CURSOR_PATH, PROC_ROOT, DRY_RUN,
  UV_THREADPOOL_SIZE (set 8 or more: NVML event waits use libuv's thread pool)

Exit codes:
  0  stopped cleanly (or --once done)
  1  unexpected failure (HTTP port taken, spool unusable, ...)
  2  bad usage or a bad environment variable (the message names it)
  3  NVML not found: "NVML not found at <path>: is the NVIDIA driver installed?"
  4  NVML found but nvmlInit failed (driver not loaded)

Examples:
  gpu-reflex agent --once --dry-run
  NVML_LIBRARY_PATH=.build/mock-nvml/libnvidia-ml.so.1 \\
  MOCK_NVML_SCENARIO=infra/local/mock-nvml/scenarios/dgx-a100-8x.json gpu-reflex agent --dry-run`;

export const agentCommand: Command = {
  path: ['agent'],
  summary: 'run the node agent: NVML → events on the bus',
  help: HELP,
  async run(args, io) {
    const values = parseFlags(args, { once: { type: 'boolean' }, 'dry-run': { type: 'boolean' } });
    let config;
    try {
      config = loadAgentConfig(process.env);
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      io.err(`gpu-reflex agent: ${oneLine(err.message)}`);
      return EXIT.config;
    }
    const stop = new AbortController();
    const onSignal = () => stop.abort();
    process.once('SIGTERM', onSignal);
    process.once('SIGINT', onSignal);
    try {
      return await runAgent({
        config,
        io,
        stop: stop.signal,
        once: values.once ?? false,
        print: values['dry-run'] ?? false,
        env: process.env,
      });
    } finally {
      process.off('SIGTERM', onSignal);
      process.off('SIGINT', onSignal);
    }
  },
};
