/**
 * Benchmark preload for the agent child process (`node --import <bundle of this file> ...`).
 * It makes XIDs visible in the mock NVML library the agent has loaded (same path, so the same
 * dlopen'ed copy) and writes down the moment it did so, in CLOCK_MONOTONIC nanoseconds
 * (`process.hrtime`), which the benchmark process shares: latency = bus receipt − this moment.
 *
 * Injection starts on SIGUSR2 (the benchmark decides when the steady-state phase ends), one XID
 * every BENCH_XID_INTERVAL_MS, BENCH_XID_COUNT in all, cycling over the GPUs. The mock delivers an
 * injected XID to every event set at once and wakes a waiter, exactly as a driver interrupt would.
 * BENCH_XID_GPUS bounds the GPUs it cycles over, BENCH_XID_LIST the XIDs.
 * It uses koffi directly (one function), not the agent's modules: the agent must not share code
 * or state with its measuring harness.
 */
import { appendFileSync } from 'node:fs';
import koffi from 'koffi';

const library = process.env.BENCH_XID_LIBRARY;
const logPath = process.env.BENCH_XID_LOG;
const intervalMs = Number(process.env.BENCH_XID_INTERVAL_MS ?? 500);
const count = Number(process.env.BENCH_XID_COUNT ?? 20);
const gpus = Number(process.env.BENCH_XID_GPUS ?? 8);
// BENCH_XID_LIST (comma-separated) replaces the default mix: `bench noise` injects a flood of one XID.
const XIDS = process.env.BENCH_XID_LIST
  ? process.env.BENCH_XID_LIST.split(',').map(Number)
  : [13, 31, 43, 48, 63, 74, 79, 94];

if (library && logPath) {
  const inject = koffi.load(library).func('mockNvmlInjectXid', 'int32', ['uint32', 'uint64', 'uint32', 'uint32']);
  const NONE = 0xffffffff;
  process.once('SIGUSR2', () => {
    let seq = 0;
    const timer = setInterval(() => {
      if (seq >= count) {
        clearInterval(timer);
        return;
      }
      const gpu = seq % gpus;
      const xid = XIDS[Math.floor(seq / gpus) % XIDS.length]!;
      const t = process.hrtime.bigint();
      const rc = inject(gpu, xid, NONE, NONE) as number;
      appendFileSync(logPath, JSON.stringify({ seq, gpu, xid, rc, t: t.toString() }) + '\n');
      seq++;
    }, intervalMs);
    // The agent's own handles decide when the process ends, never the harness.
    timer.unref();
  });
}
