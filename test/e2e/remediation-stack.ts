/**
 * The embedded remediation stack, wired the way production is: the real EventBridge SDK puts
 * events on the local bus, the bus routes them by the root serverless.yml's rules to the real
 * `functions/remediate/handler.handler` (and the `rate(1 minute)` schedule to the sweep), and the
 * handler, configured only through its environment, talks to the simulated cluster through
 * @kubernetes/client-node and publishes back to the bus through EventBridgePublisher.
 *
 * Shared by test/e2e (virtual clock) and bench/remediation.ts (wall clock).
 *
 * The handler wires itself once per process at its first invocation (a Lambda cold start), from
 * process.env: so there is one stack per process (per test file under vitest) at a time.
 */
import { injectClock, type Clock as FunctionsClock } from '../../functions/adapters/clock.ts';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EventBridgeClient, PutEventsCommand, type PutEventsRequestEntry } from '@aws-sdk/client-eventbridge';
import {
  startLocalBus,
  type Clock as BusClock,
  type EventEnvelope,
  type LocalBus,
} from '../../infra/local/bus/index.ts';
import { startKubeSim, wallClock, type Fleet, type KubeSim, type ParsedFleet } from '../../infra/local/kube/index.ts';
import type { OutgoingEvent } from '../../node-agent/events.ts';

export const ROOT_SERVERLESS_YML = new URL('../../serverless.yml', import.meta.url).pathname;
import { LOCAL_BUS_NAME as BUS_NAME } from '../../infra/local/stack-env.ts';
export { BUS_NAME };
export const NAMESPACE = 'gpu-reflex';
/** The approval key the stack's functions are given (functions/lib/approval-seal.ts): tests seal real decisions with it. */
export const E2E_APPROVAL_KEY = 'e2e-approval-key-for-the-embedded-stack-only';

export interface RemediationStackOptions {
  fleet: Fleet | ParsedFleet;
  /**
   * One clock for the bus, the cluster and the functions (injected for the stack's life, as
   * `simulate` does). A steppable clock (`advance(ms)`) gives virtual time: `stack.advance` moves
   * all three. None: wall clock everywhere.
   */
  clock?: BusClock & FunctionsClock & { advance(ms: number): void | Promise<void> };
  /** Remediation policy (the policy file's content), written to REMEDIATION_POLICY_FILE. */
  policy?: Record<string, unknown>;
  /** Concurrent deliveries on the bus (like concurrent Lambda invocations); default 1. */
  concurrency?: number;
  /** Extra environment for the functions (e.g. LOG_LEVEL). */
  env?: Record<string, string>;
}

export interface RemediationStack {
  sim: KubeSim;
  bus: LocalBus;
  client: EventBridgeClient;
  /** PutEvents through the real SDK, as the agent's publisher sends them (10 per request). */
  send(events: readonly OutgoingEvent[]): Promise<void>;
  /** Events on the bus of one detail-type (what the functions published). */
  published(detailType: string): EventEnvelope[];
  /** Virtual time: moves the shared clock, firing the sweep schedule and retries on the way. */
  advance(ms: number): Promise<void>;
  close(): Promise<void>;
}

export function toEntry(e: OutgoingEvent): PutEventsRequestEntry {
  return {
    EventBusName: BUS_NAME,
    Source: e.source,
    DetailType: e.detailType,
    Detail: JSON.stringify(e.detail),
    Time: e.time,
    Resources: e.resources ?? [],
  };
}

/** The bus and the functions, acting on the cluster a kubeconfig names (the bench's own API-server process, or the sim below). */
export interface FunctionsStackOptions extends Omit<RemediationStackOptions, 'fleet'> {
  kubeconfig: string;
}

export type FunctionsStack = Omit<RemediationStack, 'sim' | 'advance'>;

/**
 * The local bus with serverless.yml's rules and the functions' environment, acting on whichever
 * cluster `kubeconfig` names. The bench runs its simulated API server in a process of its own (as a
 * real API server is never inside a Lambda) and starts only this half here.
 */
export async function startFunctionsStack(opts: FunctionsStackOptions): Promise<FunctionsStack> {
  const dir = mkdtempSync(join(tmpdir(), 'gpu-reflex-e2e-'));
  const policyFile = join(dir, 'policy.json');
  if (opts.policy) writeFileSync(policyFile, JSON.stringify(opts.policy));
  const bus = await startLocalBus({
    serverlessYml: ROOT_SERVERLESS_YML,
    ...(opts.clock ? { clock: opts.clock } : {}),
    ...(opts.concurrency ? { concurrency: opts.concurrency } : {}),
  });

  // The functions' whole configuration, as Lambda would give it to them.
  const env: Record<string, string> = {
    KUBECONFIG: opts.kubeconfig,
    EVENT_BUS_NAME: BUS_NAME,
    GPU_REFLEX_NAMESPACE: NAMESPACE,
    LOG_LEVEL: 'error',
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
    AWS_ENDPOINT_URL_EVENTBRIDGE: bus.url,
    GPU_REFLEX_APPROVAL_KEY: E2E_APPROVAL_KEY,
    ...(opts.policy ? { REMEDIATION_POLICY_FILE: policyFile } : {}),
    ...opts.env,
  };
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  if (!opts.policy) delete process.env.REMEDIATION_POLICY_FILE;
  Object.assign(process.env, env);

  const client = new EventBridgeClient({
    endpoint: bus.url,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  return {
    bus,
    client,
    async send(events) {
      for (let i = 0; i < events.length; i += 10) {
        const out = await client.send(new PutEventsCommand({ Entries: events.slice(i, i + 10).map(toEntry) }));
        if (out.FailedEntryCount) throw new Error(`PutEvents: ${out.FailedEntryCount} entries failed`);
      }
    },
    published: (detailType) => bus.events.filter((e) => e['detail-type'] === detailType),
    async close() {
      client.destroy();
      await bus.close();
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export async function startRemediationStack(opts: RemediationStackOptions): Promise<RemediationStack> {
  if (opts.clock) injectClock(opts.clock);
  const sim = await startKubeSim({ fleet: opts.fleet, clock: opts.clock ?? wallClock });
  const dir = mkdtempSync(join(tmpdir(), 'gpu-reflex-e2e-'));
  const kubeconfig = join(dir, 'kubeconfig');
  sim.writeKubeconfig(kubeconfig);
  const { fleet: _fleet, ...rest } = opts;
  const functions = await startFunctionsStack({ ...rest, kubeconfig });
  return {
    ...functions,
    sim,
    async advance(ms) {
      await functions.bus.advance(ms);
      sim.cluster.tick();
    },
    async close() {
      await functions.close();
      await sim.close();
      rmSync(dir, { recursive: true, force: true });
      if (opts.clock) injectClock(undefined);
    },
  };
}
