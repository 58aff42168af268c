/**
 * The agent's HTTP endpoint: `/healthz` (readiness), `/livez` (liveness) for the kubelet's probes,
 * `/metrics` for Prometheus. Read-only, no body parsing.
 *
 * `/healthz` answers 200 `ok`, or 503 `degraded` with every reason (agent-health.ts): NVML calls
 * fail, PutEvents keeps failing, or events wait while nothing is delivered for DELIVERY_STALL_MINUTES.
 * `/livez` answers 200 while the process serves requests: a degraded agent is marked not ready,
 * never restarted in a loop (infra/k8s/node-agent.yaml's probes).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { healthReport, registerHealthMetric, type AgentHealth, type DeliveryStatus } from './agent-health.ts';
import type { Metrics } from './metrics.ts';

export { AgentHealth } from './agent-health.ts';

export interface AgentHttpOptions {
  port: number;
  /** Defaults to all interfaces (the pod IP), as Prometheus scrapes it from outside. */
  host?: string;
  metrics: Metrics;
  health: AgentHealth;
  /** The publisher's view: when the bus last accepted an event, how many wait, whether sends fail. */
  publisherStatus: () => DeliveryStatus;
  /** The agent's clock (ms); the start of "nothing delivered since" is its value when the server starts. */
  now?: () => number;
  /** Events waiting this long with nothing delivered: degraded. Default 10 minutes. */
  stallMs?: number;
}

export interface AgentHttpServer {
  port: number;
  close(): Promise<void>;
}

export async function startAgentHttp(options: AgentHttpOptions): Promise<AgentHttpServer> {
  const now = options.now ?? Date.now;
  const startedAt = now();
  const setGauge = registerHealthMetric(options.metrics);
  const report = () => {
    const r = healthReport({
      nvml: options.health,
      delivery: options.publisherStatus(),
      now: now(),
      startedAt,
      stallMs: options.stallMs ?? 10 * 60_000,
    });
    setGauge(r);
    return r;
  };
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    if (path === '/metrics') {
      report(); // gpu_reflex_agent_degraded as of this scrape
      res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' }).end(options.metrics.render());
      return;
    }
    if (path === '/healthz') {
      const r = report();
      const p = options.publisherStatus();
      const body = {
        status: r.status,
        ...(r.status === 'ok' ? {} : { reasons: r.reasons }),
        lastPublishAt: p.lastPublishAt === null ? null : new Date(p.lastPublishAt).toISOString(),
        spooled: p.spooledEvents,
      };
      res.writeHead(r.status === 'ok' ? 200 : 503, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      return;
    }
    if (path === '/livez') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ status: 'alive' }));
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
      }),
  };
}
