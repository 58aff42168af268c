/**
 * XID repeats the agent holds (xid-aggregate.ts) across a kill: the count of a flood's repeats is published once
 * their window closes, so until then it lives only in the agent's memory. The kernel-log cursor must not pass the
 * records of repeats still held, or an agent killed (SIGKILL, OOM) before their window closed loses them for good:
 * the next run resumes after them and `remediate` never counts them toward escalation. Each run is the real agent
 * on the mock NVML library, reading a real file standing in for /dev/kmsg.
 */
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { startAgent, type AgentFixture } from '../../test/support/agent-fixture.ts';
import { oneGpu } from '../../test/support/mock-nvml.ts';
import { FakeClock } from '../clock.ts';
import type { OutgoingEvent } from '../events.ts';
import { silentLog } from '../publisher/types.ts';
import { cursorFile } from './cursor.ts';
import { followKernelLog } from './follow.ts';
import { KernelLogCatchUp } from './read-log.ts';

const dirs: string[] = [];
const fixtures: AgentFixture[] = [];
afterEach(async () => {
  for (const fx of fixtures.splice(0)) await fx.close();
  dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true }));
});

/** A /dev/kmsg record of XID 45 (a flood's kind: held and counted), sequence number `seq`, `sec` s after boot. */
const xid45 = (seq: number, sec: number) =>
  `4,${seq},${sec * 1_000_000},-;NVRM: Xid (PCI:0000:3B:00): 45, pid=4242, name=python3, Ch 0000000a`;

/**
 * One run of the agent's kernel-log follower over what the log holds. The agent is left as it is (no flush: a
 * kill), unless `flush` (a stop: the agent flushed after its loops, as agent-runtime.ts does).
 */
async function follow(fx: AgentFixture, kmsg: string, proc: string, cursorPath: string, flush = false): Promise<void> {
  const tap = new KernelLogCatchUp(new FakeClock());
  const stop = new AbortController();
  let flushedNow!: () => void;
  const flushed = new Promise<void>((resolve) => (flushedNow = resolve));
  let asleep!: () => void;
  const readAll = new Promise<void>((resolve) => (asleep = resolve));
  const done = followKernelLog(
    fx.agent,
    kmsg,
    stop.signal,
    silentLog,
    { sleep: (ms, signal) => (asleep(), tap.sleep(ms, signal)), stopped: () => tap.stopped() },
    { cursor: cursorFile(cursorPath), procDir: proc, now: fx.now, ...(flush ? { flushed } : {}) },
  );
  await readAll;
  stop.abort();
  await done;
  if (flush) {
    // As agent-runtime.ts: flushed once every loop has ended, some turns after the follower's.
    for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
    fx.agent.flush();
    flushedNow();
  }
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r)); // the cursor's last save
}

/** A node's /proc (boot id, uptime 1 s), an empty file standing in for /dev/kmsg, and where the cursor is kept. */
function node() {
  const dir = mkdtempSync(join(tmpdir(), 'gr-held-'));
  dirs.push(dir);
  const proc = join(dir, 'proc');
  mkdirSync(join(proc, 'sys/kernel/random'), { recursive: true });
  writeFileSync(join(proc, 'sys/kernel/random/boot_id'), 'boot-1\n');
  writeFileSync(join(proc, 'uptime'), '1.00 1.00\n');
  const kmsg = join(dir, 'kmsg');
  writeFileSync(kmsg, '');
  return { proc, kmsg, cursorPath: join(dir, 'spool.jsonl.kmsg.json') };
}

const counted = (events: OutgoingEvent[]) =>
  events
    .filter((e) => e.detailType === 'GPU XID Error')
    .reduce((n, e) => n + Number((e.detail as { count?: number }).count ?? 1), 0);

it('publishes the repeats a killed agent held, from the kernel log, once the next run reads them again', async () => {
  const { proc, kmsg, cursorPath } = node();

  // The first run: a flood of five XID 45 from one process, the first published at once, four held.
  const a = await startAgent(oneGpu(), { pids: [4242] });
  fixtures.push(a);
  await a.agent.sampleOnce();
  appendFileSync(kmsg, [1, 2, 3, 4, 5].map((i) => `${xid45(i, 1 + i)}\n`).join(''));
  await follow(a, kmsg, proc, cursorPath);
  const first = a.published.filter((e) => e.detailType === 'GPU XID Error');
  expect(counted(first)).toBe(1);
  // Killed (SIGKILL) before the window closed: no flush, the four held repeats were never published.

  // The next run, on the same boot: whatever the first held and did not publish is read again.
  writeFileSync(join(proc, 'uptime'), '100.00 1.00\n');
  const b = await startAgent(oneGpu(), { pids: [4242] });
  fixtures.push(b);
  await b.agent.sampleOnce();
  await follow(b, kmsg, proc, cursorPath);
  b.agent.flush(); // a stop (SIGTERM): held repeats go out
  expect(counted(first) + counted(b.published)).toBe(5);
});

it('publishes the held repeats once at a stop: the next run does not read them again', async () => {
  const n = node();
  const a = await startAgent(oneGpu(), { pids: [4242] });
  fixtures.push(a);
  await a.agent.sampleOnce();
  appendFileSync(n.kmsg, [1, 2, 3, 4, 5].map((i) => `${xid45(i, 1 + i)}\n`).join(''));
  await follow(a, n.kmsg, n.proc, n.cursorPath, true); // SIGTERM: the four held go out with the flush
  expect(counted(a.published)).toBe(5);
  writeFileSync(join(n.proc, 'uptime'), '100.00 1.00\n');
  const b = await startAgent(oneGpu(), { pids: [4242] });
  fixtures.push(b);
  await b.agent.sampleOnce();
  await follow(b, n.kmsg, n.proc, n.cursorPath);
  b.agent.flush();
  expect(counted(b.published)).toBe(0);
});
