import { afterEach, describe, expect, it } from 'vitest';
import { AgentHealth, startAgentHttp, type AgentHttpServer } from './http.ts';
import { Metrics } from './metrics.ts';

let server: AgentHttpServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function start(status = { lastPublishAt: null as number | null, spooledEvents: 0 }) {
  const metrics = new Metrics();
  const health = new AgentHealth();
  server = await startAgentHttp({ port: 0, host: '127.0.0.1', metrics, health, publisherStatus: () => status });
  const url = (path: string) => `http://127.0.0.1:${server!.port}${path}`;
  return { metrics, health, url };
}

describe('agent http', () => {
  it('answers /healthz 200 with the last publish time and spool depth', async () => {
    const { url } = await start({ lastPublishAt: Date.UTC(2026, 0, 1), spooledEvents: 3 });
    const res = await fetch(url('/healthz'));
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ok', lastPublishAt: '2026-01-01T00:00:00.000Z', spooled: 3 });
  });

  it('answers /healthz 503 while NVML is marked unhealthy, and 200 again once cleared', async () => {
    const { url, health } = await start();
    health.setNvmlHealthy(false, 'nvmlInit failed: driver not loaded');
    const res = await fetch(url('/healthz'));
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({
      status: 'unhealthy',
      reason: 'nvmlInit failed: driver not loaded',
      lastPublishAt: null,
    });
    health.setNvmlHealthy(true);
    expect((await fetch(url('/healthz'))).status).toBe(200);
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
