/**
 * Issue #17 "Not one XID lost, even to SIGKILL": a real `gpu-reflex agent` process on the mock NVML
 * fires three XIDs while the bus hangs (it accepts connections and never answers: the first send is
 * in flight for its whole 10 s request timeout), is SIGKILLed, and a restarted agent on the same
 * spool (and a mock NVML that fires nothing more) delivers each XID to the bus exactly once.
 * Without write-ahead the XIDs sit in memory for the hung call's 10 s and more, and the spool does
 * not show them within the 8 s this test allows after the agent started: the test fails then.
 * Separate processes: the waits poll observable state (the agent's log, the spool file, the bus).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startLocalBus, type LocalBus } from '../../infra/local/bus/index.ts';
import { buildMockNvml, MOCK_NVML_SCENARIOS } from '../../infra/local/mock-nvml/build.ts';
import { REPO_ROOT } from '../../infra/local/stack-env.ts';

const dir = mkdtempSync(join(tmpdir(), 'gr-sigkill-'));
const children: ChildProcess[] = [];
let bus: LocalBus | undefined;
afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await bus?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A bus that accepts connections and never answers (port chosen by the OS). */
async function hangingBus(): Promise<{ url: string; close: () => Promise<void> }> {
  const sockets = new Set<Socket>();
  const s = createServer((socket) => void sockets.add(socket));
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(s.address() as { port: number }).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        s.close(() => resolve());
      }),
  };
}

async function until<T>(what: string, probe: () => T | undefined, ms = 60_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function agent(env: Record<string, string>): { child: ChildProcess; log: () => string } {
  const c = spawn(process.execPath, [join(REPO_ROOT, 'bin', 'gpu-reflex.js'), 'agent'], {
    cwd: REPO_ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  children.push(c);
  let log = '';
  c.stderr!.setEncoding('utf8').on('data', (d: string) => (log += d));
  return { child: c, log: () => log };
}

describe('gpu-reflex agent, SIGKILLed while the bus is down', () => {
  it('delivers every XID the mock NVML fired exactly once after a restart', async () => {
    const library = await buildMockNvml();
    const base = JSON.parse(readFileSync(join(MOCK_NVML_SCENARIOS, 'dgx-a100-8x.json'), 'utf8')) as Record<
      string,
      unknown
    >;
    const withFaults = join(dir, 'faults.json');
    const quiet = join(dir, 'quiet.json');
    // Three XIDs soon after NVML opens (mock time runs from the first nvmlInit).
    writeFileSync(
      withFaults,
      JSON.stringify({
        ...base,
        faults: [79, 48, 95].map((xid, i) => ({ atMs: 300 + 200 * i, gpu: i, kind: 'xid', xid })),
      }),
    );
    writeFileSync(quiet, JSON.stringify({ ...base, faults: [] }));
    const spool = join(dir, 'spool.jsonl');
    const common = {
      NODE_NAME: 'gpu-node-kill',
      NVML_LIBRARY_PATH: library,
      PROC_ROOT: join(dir, 'proc'),
      KMSG_PATH: join(dir, 'kmsg'),
      SPOOL_PATH: spool,
      DEAD_LETTER_PATH: join(dir, 'dead.jsonl'),
      EVENT_BUS_NAME: 'gpu-reflex',
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'local',
      AWS_SECRET_ACCESS_KEY: 'local',
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
      UV_THREADPOOL_SIZE: '8',
      HTTP_PORT: '0',
      SAMPLE_INTERVAL_MS: '60000',
      MOCK_NVML_QUIET: '1',
    };
    writeFileSync(common.KMSG_PATH, '');

    const hung = await hangingBus();
    const first = agent({ ...common, MOCK_NVML_SCENARIO: withFaults, AWS_ENDPOINT_URL_EVENTBRIDGE: hung.url });
    await until('the agent to start', () => (first.log().includes('agent started') ? true : undefined));
    // Written ahead, while the first send hangs: all three are on disk (the journal beside the
    // spool) well before that call's timeout.
    const spooled = await until(
      'three XIDs written ahead',
      () => {
        const text = [spool, `${spool}.wal`]
          .map((f) => {
            try {
              return readFileSync(f, 'utf8');
            } catch {
              return '';
            }
          })
          .join('\n');
        const ids = [...new Set([...text.matchAll(/"eventId":"(xid:[^"]+)"/g)].map((m) => m[1]!))];
        return ids.length >= 3 ? ids : undefined;
      },
      8_000,
    );
    first.child.kill('SIGKILL');
    await new Promise((r) => first.child.once('exit', r));
    await hung.close();

    bus = await startLocalBus({ busName: 'gpu-reflex' });
    const second = agent({ ...common, MOCK_NVML_SCENARIO: quiet, AWS_ENDPOINT_URL_EVENTBRIDGE: bus.url });
    await until('the XIDs at the bus', () =>
      bus!.events.filter((e) => e['detail-type'] === 'GPU XID Error').length >= 3 ? true : undefined,
    );
    // A graceful stop flushes whatever else it held; then count: each XID once, none twice.
    second.child.kill('SIGTERM');
    await new Promise((r) => second.child.once('exit', r));
    const atBus = bus.events
      .filter((e) => e['detail-type'] === 'GPU XID Error')
      .map((e) => e.detail as { eventId: string; xid: number });
    expect(atBus.map((d) => d.xid).sort()).toEqual([48, 79, 95]);
    expect(atBus.map((d) => d.eventId).sort()).toEqual([...spooled].sort());
  }, 120_000);
});
