/**
 * A kernel-log XID is the kernel's record, whoever reads it and when. An agent killed (SIGKILL, OOM) after it
 * published records but before its cursor was saved reads them again on its next start (cursor.ts): they must go
 * out under the ids they had, or remediation, which deduplicates on eventId, counts one XID twice toward an
 * escalation. And a record logged while no agent ran says when the kernel logged it, not when the agent read it.
 * The real agent on the mock NVML; a real file stands in for /dev/kmsg, /proc's uptime and boot id in a temp dir.
 */
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { oneGpu } from '../../test/support/mock-nvml.ts';
import { START, startAgent, type AgentFixture } from '../../test/support/agent-fixture.ts';
import { FakeClock } from '../clock.ts';
import type { OutgoingEvent } from '../events.ts';
import { silentLog } from '../publisher/types.ts';
import { cursorFile } from './cursor.ts';
import { followKernelLog } from './follow.ts';
import { KernelLogCatchUp } from './read-log.ts';

const BOOT = '6f1d2c3b-4a59-4e8f-9a0b-1c2d3e4f5a6b';
const dirs: string[] = [];
const agents: AgentFixture[] = [];
afterEach(async () => {
  for (const a of agents.splice(0)) await a.close();
  dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true }));
});

/** A /dev/kmsg record (Documentation/ABI/testing/dev-kmsg): `prio,seq,usec,flags;text`. */
const record = (seq: number, sec: number, text: string) => `4,${seq},${sec * 1_000_000},-;${text}`;
const XID_79 = 'NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=x, GPU has fallen off the bus.';
const SXID = 'nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 20034, Fatal, Link 48 LTSSM Fault Up';

function node() {
  const dir = mkdtempSync(join(tmpdir(), 'gr-kmsg-id-'));
  dirs.push(dir);
  const proc = join(dir, 'proc');
  mkdirSync(join(proc, 'sys/kernel/random'), { recursive: true });
  writeFileSync(join(proc, 'sys/kernel/random/boot_id'), `${BOOT}\n`);
  const kmsg = join(dir, 'kmsg');
  writeFileSync(kmsg, '');
  const cursorPath = join(dir, 'spool.jsonl.kmsg.json');
  return {
    kmsg,
    cursorPath,
    uptime: (sec: number) => writeFileSync(join(proc, 'uptime'), `${sec}.00 1.00\n`),
    log: (...records: string[]) => appendFileSync(kmsg, records.map((r) => `${r}\n`).join('')),
    /** The cursor an earlier run of this boot saved. */
    saved: (seq: number) => writeFileSync(cursorPath, JSON.stringify({ bootId: BOOT, seq })),
    proc,
  };
}

/**
 * One agent process on the node: started `uptimeSec` after boot (boot at START on its clock), it reads what the log
 * holds and stops. `killed`: the publisher's journal never answers, so the cursor is not saved (a SIGKILL).
 */
async function agentRun(n: ReturnType<typeof node>, uptimeSec: number, killed: boolean): Promise<OutgoingEvent[]> {
  const fx = await startAgent(oneGpu());
  agents.push(fx);
  fx.advance(uptimeSec * 1000);
  n.uptime(uptimeSec);
  const tap = new KernelLogCatchUp(new FakeClock());
  const stop = new AbortController();
  let asleep!: () => void;
  const readAll = new Promise<void>((resolve) => (asleep = resolve));
  const done = followKernelLog(
    fx.agent,
    n.kmsg,
    stop.signal,
    silentLog,
    { sleep: (ms, signal) => (asleep(), tap.sleep(ms, signal)), stopped: () => tap.stopped() },
    {
      cursor: cursorFile(n.cursorPath),
      procDir: n.proc,
      now: fx.now,
      durable: () => (killed ? new Promise(() => undefined) : Promise.resolve()),
    },
  );
  await readAll;
  stop.abort();
  await done;
  await new Promise((r) => setImmediate(r));
  return fx.published;
}

const ids = (events: OutgoingEvent[]) => events.map((e) => [e.detailType, e.detail.eventId]);
const at = (sec: number) => new Date(START + sec * 1000).toISOString();

describe('a kernel-log XID is the kernel record', () => {
  it('keeps its event id when an agent killed before saving its cursor reads the record again', async () => {
    const n = node();
    n.saved(4);
    n.log(record(5, 12, XID_79), record(6, 13, SXID));
    const first = await agentRun(n, 20, true);
    expect(first.map((e) => e.detailType)).toEqual(['GPU XID Error', 'NVSwitch SXid Error']);
    const again = await agentRun(n, 60, false); // read again 40 s later, by the next agent
    expect(ids(again)).toEqual(ids(first));
    // The boot and the record's sequence number, not when it was read.
    expect(first[0]!.detail.eventId).toMatch(
      /^xid:gpu-node-1:GPU-00000000-1111-2222-3333-444444444444:79:k6f1d2c3b\.5$/,
    );
    expect(first[1]!.detail.eventId).toMatch(/^sxid:gpu-node-1:nvidia-nvswitch1:20034:48:k6f1d2c3b\.6$/);
    // Saved this time: a third start publishes nothing.
    expect(await agentRun(n, 90, false)).toEqual([]);
  });

  it('says when the kernel logged a record read after a restart, not when it was read', async () => {
    const n = node();
    n.saved(4);
    n.log(record(5, 12, XID_79), record(6, 30, SXID)); // while no agent ran
    // Stamped after the agent's start (a kernel clock 5 s ahead of uptime): read as it was logged, it goes by the
    // agent's clock, as NVML's sighting of it would.
    n.log(record(7, 105, XID_79));
    const events = await agentRun(n, 100, false);
    expect(events.map((e) => [e.detail['observedAt'], e.time.toISOString()])).toEqual([
      [at(12), at(12)],
      [at(30), at(30)],
      [at(100), at(100)],
    ]);
  });

  it('keeps the time it read a line with no record (a log file), and its id as before', async () => {
    const fx = await startAgent(oneGpu());
    agents.push(fx);
    fx.advance(5000);
    // Not a /dev/kmsg record (a log file of another shape): nothing names the record but when it was read.
    const [e] = fx.agent.onKernelLine(`[ 12.000000] ${XID_79}`);
    expect(e!.detail.eventId).toBe(`xid:gpu-node-1:GPU-00000000-1111-2222-3333-444444444444:79:${START + 5000}`);
    expect(e!.detail['observedAt']).toBe(at(5));
  });
});
