/**
 * The agent's HTTP endpoint: `/healthz` for the kubelet's probes, `/metrics` for Prometheus.
 * Read-only, no body parsing. `/healthz` answers 503 while NVML is marked unhealthy (the driver
 * is gone or wedged: the pod should restart); a bus outage does NOT fail health, because the
 * spool handles it and a restart would not help.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Metrics } from './metrics.ts';

/** What other parts of the agent report about themselves. */
export class AgentHealth {
  private nvml: { healthy: boolean; reason?: string } = { healthy: true };

  setNvmlHealthy(healthy: boolean, reason?: string): void {
    this.nvml = reason === undefined ? { healthy } : { healthy, reason };
  }

  get nvmlHealthy(): boolean {
    return this.nvml.healthy;
  }

  get nvmlReason(): string | undefined {
    return this.nvml.reason;
  }
}

export interface AgentHttpOptions {
  port: number;
  /** Defaults to all interfaces (the pod IP), as Prometheus scrapes it from outside. */
  host?: string;
  metrics: Metrics;
  health: AgentHealth;
  /** The publisher's view: when the bus last accepted an event, how many wait in the spool. */
  publisherStatus: () => { lastPublishAt: number | null; spooledEvents: number };
}

export interface AgentHttpServer {
  port: number;
  close(): Promise<void>;
}

export async function startAgentHttp(options: AgentHttpOptions): Promise<AgentHttpServer> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    if (path === '/metrics') {
      res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' }).end(options.metrics.render());
      return;
    }
    if (path === '/healthz') {
      const p = options.publisherStatus();
      const healthy = options.health.nvmlHealthy;
      const body = {
        status: healthy ? 'ok' : 'unhealthy',
        ...(healthy ? {} : { reason: options.health.nvmlReason ?? 'NVML unhealthy' }),
        lastPublishAt: p.lastPublishAt === null ? null : new Date(p.lastPublishAt).toISOString(),
        spooled: p.spooledEvents,
      };
      res.writeHead(healthy ? 200 : 503, { 'content-type': 'application/json' }).end(JSON.stringify(body));
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
