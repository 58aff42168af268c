import { writeFileSync } from 'node:fs';
import { listen } from '../http-kit.ts';
import { createServer, type Server, type ServerResponse } from 'node:http';
import { VirtualClock } from '../../../events/clock.ts';
import { ManualClock, wallClock } from './clock.ts';
import type { ApiSettings } from './api-versions.ts';
import { Cluster } from './cluster.ts';
import { loadFleet, validateFleet, type Fleet, type ParsedFleet } from './fleet.ts';
import { seedFleet } from './fleet-seed.ts';
import { Faults } from './faults.ts';
import { kubeconfigYaml } from './kubeconfig.ts';
import { serveMarker, simulatedClusterMarker, type SimulatedClusterMarker } from './identity.ts';
import { createHandler } from './server.ts';
import type { Store } from './store.ts';
import type { Clock } from './types.ts';

/**
 * The simulated Kubernetes cluster: an HTTP server speaking enough of the Kubernetes REST API for
 * @kubernetes/client-node and kubectl to run unchanged, over an in-memory store with a small
 * scheduler, kubelet and controllers driven by an injected clock.
 *
 *   const sim = await startKubeSim({ fleet: EXAMPLE_FLEET_PATH });
 *   kc.loadFromString(sim.kubeconfig());
 *   sim.advance(30_000); // grace periods end, pods get replaced and scheduled
 */
export interface KubeSimOptions {
  /** A fleet object, or a path to a YAML/JSON fleet file. None: an empty cluster (default, kube-system). */
  fleet?: Fleet | ParsedFleet | string;
  /** 0 (default) lets the OS pick. */
  port?: number;
  host?: string;
  /** Default: a ManualClock at 2026-01-01T00:00:00Z. Pass `wallClock` for real time. */
  clock?: Clock;
  /**
   * With a clock that moves by itself, how often (ms) to process what came due (grace periods)
   * when no request arrives, so a watcher (`kubectl delete --wait`) sees pods go on time.
   * Default: 200 with `wallClock`, never with other clocks (tests call `advance`).
   */
  tickEveryMs?: number;
  /**
   * Serve the marker that says "simulated" (identity.ts; default true). False: a stand-in for a
   * real cluster, for tests of what refuses to write to one.
   */
  marker?: boolean;
  /**
   * The Kubernetes release served (1.32–1.37, default 1.37), its feature gates and
   * runtime-config (api-versions.ts).
   */
  apis?: ApiSettings;
  /**
   * How often each node's kubelet syncs its status (default 10 s, the kubelet's
   * nodeStatusUpdateFrequency); its NodeNotSchedulable / NodeSchedulable Events come at that sync.
   */
  kubeletStatusSeconds?: number;
}

export interface KubeSim {
  url: string;
  server: Server;
  /** Read-only view for tests; product code mutates over HTTP. */
  store: Store;
  cluster: Cluster;
  clock: Clock;
  /** `as`: requests impersonate that user (`system:serviceaccount:<ns>:<name>`), and RBAC decides them. */
  kubeconfig(as?: string): string;
  writeKubeconfig(path: string, as?: string): void;
  /** Moves a ManualClock forward (other clocks move by themselves), then lets the cluster catch up. */
  advance(ms: number): void;
  /** Lets the cluster catch up with its clock as it stands (due terminations, MIG, scheduling). */
  tick(): void;
  /** Makes matching requests fail with a real Status (e.g. one 409 on the next node PATCH). */
  faults: Faults;
  /** What it serves at SIMULATED_CLUSTER_PATH; undefined when started with `marker: false`. */
  marker: SimulatedClusterMarker | undefined;
  close(): Promise<void>;
}

export async function startKubeSim(options: KubeSimOptions = {}): Promise<KubeSim> {
  const clock = options.clock ?? new ManualClock();
  const fleet = typeof options.fleet === 'string' ? loadFleet(options.fleet) : validateFleet(options.fleet ?? {});
  const cluster = new Cluster(clock, {
    migLayouts: fleet.migConfigs,
    migReconfigureSeconds: fleet.migReconfigureSeconds,
    migManagerConfig: fleet.migManagerConfig,
    migAllocatableLagSeconds: fleet.migAllocatableLagSeconds,
    ...(options.apis ? { apis: options.apis } : {}),
    ...(options.kubeletStatusSeconds !== undefined ? { kubeletStatusSeconds: options.kubeletStatusSeconds } : {}),
  });
  seedFleet(cluster, fleet);

  const open = new Set<ServerResponse>();
  const faults = new Faults();
  const handler = createHandler(cluster, open, faults);
  const marker = options.marker === false ? undefined : simulatedClusterMarker();
  const server = createServer((req, res) => {
    if (!marker || !serveMarker(marker, req, res)) void handler(req, res);
  });
  server.keepAliveTimeout = 60_000;
  const host = options.host ?? '127.0.0.1';
  const port = await listen(server, options.port ?? 0, host);
  const tickEvery = options.tickEveryMs ?? (clock === wallClock ? 200 : 0);
  const ticker = tickEvery > 0 ? setInterval(() => cluster.tick(), tickEvery) : undefined;
  ticker?.unref();
  const url = `http://${host}:${port}`;
  return {
    url,
    server,
    store: cluster.store,
    cluster,
    clock,
    kubeconfig: (as) => kubeconfigYaml(url, undefined, as),
    writeKubeconfig: (path, as) => writeFileSync(path, kubeconfigYaml(url, undefined, as), { mode: 0o600 }),
    tick: () => cluster.tick(),
    faults,
    marker,
    advance(ms) {
      if (clock instanceof VirtualClock) clock.advance(ms);
      cluster.tick();
    },
    close: () =>
      new Promise<void>((resolve) => {
        clearInterval(ticker);
        for (const res of open) res.end();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

export { ManualClock, wallClock } from './clock.ts';
export { Cluster } from './cluster.ts';
export { KUBERNETES_VERSIONS, type ApiSettings, type KubernetesVersion } from './api-versions.ts';
export {
  EXAMPLE_FLEET_PATH,
  FleetError,
  FleetSchema,
  loadFleet,
  parseFleet,
  type Fleet,
  type ParsedFleet,
} from './fleet.ts';
export { syntheticFleet } from './fleet-seed.ts';
export type { Clock, KubeObject, Node, Pod } from './types.ts';
export type { Store } from './store.ts';
export type { FaultSpec } from './faults.ts';
