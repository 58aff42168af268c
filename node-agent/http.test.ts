import { afterEach, describe, expect, it } from 'vitest';
import { AgentHealth, startAgentHttp, type AgentHttpServer } from './http.ts';
import { Metrics } from './metrics.ts';

let server: AgentHttpServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

type Status = { lastPublishAt: number | null; spooledEvents: number; queued?: number; busReachable?: boolean };
const T0 = Date.UTC(2026, 0, 1);

async function start(status: Status = { lastPublishAt: null, spooledEvents: 0 }) {
  const metrics = new Metrics();
  const health = new AgentHealth();
  let t = T0;
  const current = { ...status };
  server = await startAgentHttp({
    port: 0,
    host: '127.0.0.1',
    metrics,
    health,
    publisherStatus: () => current,
    now: () => t,
    stallMs: 10 * 60_000,
  });
  const url = (path: string) => `http://127.0.0.1:${server!.port}${path}`;
  const advance = (ms: number) => void (t += ms);
  return { metrics, health, url, advance, status: current };
}

const get = async (url: string) => {
  const res = await fetch(url);
  return { code: res.status, body: (await res.json()) as { status: string; reasons?: string[] } };
};

describe('agent http', () => {
  it('answers /healthz 200 with the last publish time and spool depth', async () => {
    const { url } = await start({ lastPublishAt: T0, spooledEvents: 3 });
    const res = await fetch(url('/healthz'));
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ok', lastPublishAt: '2026-01-01T00:00:00.000Z', spooled: 3 });
  });

  it('answers /healthz 503 degraded while NVML is marked unhealthy, with the reason; 200 again once cleared', async () => {
    const { url, health } = await start();
    health.setNvmlHealthy(false, 'nvmlInit failed: driver not loaded');
    expect(await get(url('/healthz'))).toEqual({
      code: 503,
      body: expect.objectContaining({
        status: 'degraded',
        reasons: ['nvml: nvmlInit failed: driver not loaded'],
        lastPublishAt: null,
      }),
    });
    health.setNvmlHealthy(true);
    expect((await fetch(url('/healthz'))).status).toBe(200);
  });

  it('is degraded while PutEvents keeps failing (the bus unreachable), and ok once a send succeeds', async () => {
    const { url, status } = await start({ lastPublishAt: T0, spooledEvents: 4, busReachable: false });
    const r = await get(url('/healthz'));
    expect(r.code).toBe(503);
    expect(r.body.reasons).toEqual([
      'delivery-failing: PutEvents keeps failing; 4 events wait in the spool (the log says why)',
    ]);
    Object.assign(status, { busReachable: true, spooledEvents: 0, lastPublishAt: T0 + 1 });
    expect((await get(url('/healthz'))).code).toBe(200);
  });

  it('is degraded when events wait and nothing was delivered for the stall time — not when merely quiet', async () => {
    const { url, status, advance } = await start({ lastPublishAt: T0, spooledEvents: 0 });
    advance(60 * 60_000); // an hour with nothing to send: still ok
    expect((await get(url('/healthz'))).code).toBe(200);
    Object.assign(status, { lastPublishAt: T0 + 60 * 60_000, spooledEvents: 2, queued: 1 });
    advance(10 * 60_000 - 1);
    expect((await get(url('/healthz'))).code).toBe(200);
    advance(1);
    const r = await get(url('/healthz'));
    expect(r.code).toBe(503);
    expect(r.body.reasons).toEqual([
      'delivery-stalled: 3 events waiting, nothing delivered for 10 min (last at 2026-01-01T01:00:00.000Z)',
    ]);
  });

  it('counts the stall from the start when nothing was ever delivered', async () => {
    const { url, advance } = await start({ lastPublishAt: null, spooledEvents: 1 });
    advance(10 * 60_000);
    expect((await get(url('/healthz'))).body.reasons).toEqual([
      'delivery-stalled: 1 events waiting, nothing delivered for 10 min (none since the start)',
    ]);
  });

  it('names every reason at once', async () => {
    const { url, health, advance } = await start({ lastPublishAt: null, spooledEvents: 5, busReachable: false });
    health.setNvmlHealthy(false, 'nvmlDeviceGetCount: GPU is lost');
    advance(11 * 60_000);
    expect((await get(url('/healthz'))).body.reasons?.map((r) => r.split(':')[0])).toEqual([
      'nvml',
      'delivery-failing',
      'delivery-stalled',
    ]);
  });

  it('answers /livez 200 while degraded: the liveness probe never restarts a degraded agent', async () => {
    const { url, health } = await start({ lastPublishAt: null, spooledEvents: 5, busReachable: false });
    health.setNvmlHealthy(false, 'wedged');
    expect((await fetch(url('/healthz'))).status).toBe(503);
    expect(await get(url('/livez'))).toEqual({ code: 200, body: { status: 'alive' } });
  });

  it('shows gpu_reflex_agent_degraded by reason in /metrics, as of each scrape', async () => {
    const { url, health } = await start();
    const scrape = async () => (await (await fetch(url('/metrics'))).text()).split('\n');
    expect(await scrape()).toContain('gpu_reflex_agent_degraded{reason="nvml"} 0');
    health.setNvmlHealthy(false, 'wedged');
    const lines = await scrape();
    expect(lines).toContain('gpu_reflex_agent_degraded{reason="nvml"} 1');
    expect(lines).toContain('gpu_reflex_agent_degraded{reason="delivery-stalled"} 0');
  });

  it('serves every registered metric in the Prometheus text format', async () => {
    const { url, metrics } = await start();
    metrics
      .gauge('gpu_reflex_last_xid_timestamp_seconds', 'When the last XID was seen.', ['gpu'])
      .set({ gpu: '0' }, 1767225600);
    const res = await fetch(url('/metrics'));
    expect(res.headers.get('content-type')).toContain('text/plain; version=0.0.4');
    expect(await res.text()).toContain('gpu_reflex_last_xid_timestamp_seconds{gpu="0"} 1767225600');
  });

  it.each([
    ['/nope', 'GET', 404],
    ['/metrics', 'POST', 405],
  ])('answers %s %s with %i', async (path, method, status) => {
    const { url } = await start();
    expect((await fetch(url(path), { method })).status).toBe(status);
  });
});
