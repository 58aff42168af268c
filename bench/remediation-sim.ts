/**
 * `node --import tsx bench/remediation-sim.ts` (forked by remediation-run.ts, IPC channel): the
 * remediation bench's simulated API server, in a process of its own — a real API server never
 * shares a CPU with the Lambdas that call it, and on the 2-core bench machine this gives each side
 * one core. Everything measured at the cluster happens here, in the process that holds the store:
 * the moment each failing node becomes unschedulable (a store listener: no polling delay), the most
 * cordoned nodes of any pool at any moment, the API requests by verb and resource, the pods evicted,
 * and where this process's CPU went. Times cross the process boundary as epoch milliseconds
 * (`performance.timeOrigin + performance.now()`: sub-millisecond, same wall clock on both sides).
 */
import { performance } from 'node:perf_hooks';
import { startKubeSim, wallClock, type KubeObject, type KubeSim } from '../infra/local/kube/index.ts';
import { startCpuProfile, type CpuShares } from './cpu-profile.ts';
import { benchFleet, epochNow, type RunSpec } from './remediation-fleet.ts';
import { countRequests, type RequestCounter } from './sim-requests.ts';

/** Parent → sim. */
export type SimCommand =
  | { type: 'start'; spec: RunSpec; kubeconfig: string }
  | { type: 'watch'; id: number; nodes: string[] }
  | { type: 'storm-begin'; nodes: string[] }
  | { type: 'storm-end' }
  | { type: 'close' };

/** What the cluster side measured over a storm. */
export interface SimStormReport {
  mostInPool: number;
  requests: Record<string, number>;
  podsEvicted: number;
  cpu: CpuShares;
  /** CPU the API-server process used during the storm (user + system), ms. */
  processCpuMs: number;
}

/** Sim → parent. */
export type SimReply =
  | { type: 'ready'; nodes: number; pods: number; setupSeconds: number }
  | { type: 'cordoned'; id: number; node: string; atEpochMs: number }
  | { type: 'storm-begun' }
  | { type: 'storm-ended'; report: SimStormReport }
  | { type: 'error'; message: string };

const unschedulable = (o: KubeObject) => (o as { spec?: { unschedulable?: boolean } }).spec?.unschedulable === true;

/** Counts, after every node write, the most cordoned nodes any storm pool has at one moment. */
function watchPools(sim: KubeSim): { most: () => number; stop: () => void } {
  const out = new Map<string, Set<string>>();
  let most = 0;
  const stop = sim.store.subscribe((e) => {
    if (e.resource !== 'nodes') return;
    const pool = e.object.metadata.labels?.['gpu-reflex.io/pool'];
    if (!pool || pool === 'latency') return;
    let members = out.get(pool);
    if (!members) out.set(pool, (members = new Set()));
    if (e.type !== 'DELETED' && unschedulable(e.object)) members.add(e.object.metadata.name);
    else members.delete(e.object.metadata.name);
    most = Math.max(most, members.size);
  });
  return { most: () => most, stop: () => void stop() };
}

function send(reply: SimReply): void {
  process.send!(reply);
}

let sim: KubeSim | undefined;
let storm:
  | {
      requests: RequestCounter;
      pools: ReturnType<typeof watchPools>;
      podsBefore: Map<string, number>;
      cpu0: NodeJS.CpuUsage;
      profile: Awaited<ReturnType<typeof startCpuProfile>>;
    }
  | undefined;

async function handle(cmd: SimCommand): Promise<void> {
  switch (cmd.type) {
    case 'start': {
      const t = performance.now();
      sim = await startKubeSim({ fleet: benchFleet(cmd.spec), clock: wallClock });
      sim.writeKubeconfig(cmd.kubeconfig);
      send({
        type: 'ready',
        nodes: sim.store.count('nodes'),
        pods: sim.store.count('pods'),
        setupSeconds: (performance.now() - t) / 1000,
      });
      return;
    }
    case 'watch': {
      const s = sim!;
      const waiting = new Set(cmd.nodes);
      const stop = s.store.subscribe((e) => {
        if (e.resource !== 'nodes' || !waiting.has(e.object.metadata.name) || !unschedulable(e.object)) return;
        waiting.delete(e.object.metadata.name);
        send({ type: 'cordoned', id: cmd.id, node: e.object.metadata.name, atEpochMs: epochNow() });
        if (waiting.size === 0) stop();
      });
      return;
    }
    case 'storm-begin': {
      const s = sim!;
      storm = {
        podsBefore: new Map(cmd.nodes.map((n) => [n, s.store.podsOnNode(n).length])),
        requests: countRequests(s.server),
        pools: watchPools(s),
        profile: await startCpuProfile(1000, 'api-server'),
        cpu0: process.cpuUsage(),
      };
      send({ type: 'storm-begun' });
      return;
    }
    case 'storm-end': {
      const s = sim!;
      const st = storm!;
      const used = process.cpuUsage(st.cpu0);
      const cpu = await st.profile.stop();
      st.requests.stop();
      st.pools.stop();
      const podsEvicted = [...st.podsBefore].reduce(
        (sum, [n, before]) => sum + before - s.store.podsOnNode(n).filter((p) => !p.metadata.deletionTimestamp).length,
        0,
      );
      send({
        type: 'storm-ended',
        report: {
          mostInPool: st.pools.most(),
          requests: Object.fromEntries([...st.requests.counts].sort((a, b) => b[1] - a[1])),
          podsEvicted,
          cpu,
          processCpuMs: (used.user + used.system) / 1000,
        },
      });
      return;
    }
    case 'close':
      await sim?.close();
      process.exit(0);
  }
}

if (!process.send) {
  process.stderr.write('remediation-sim.ts is started by bench/remediation-run.ts over an IPC channel\n');
  process.exit(2);
}
// The run that forked us is gone (finished, killed, timed out): so is its API server.
process.on('disconnect', () => process.exit(0));
process.on('message', (cmd: SimCommand) => {
  handle(cmd).catch((err: unknown) =>
    send({ type: 'error', message: err instanceof Error ? (err.stack ?? err.message) : String(err) }),
  );
});
