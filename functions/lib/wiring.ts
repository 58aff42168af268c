/**
 * Cold-start wiring shared by the functions: config → logger, Kubernetes ports, bus publisher,
 * notifier, clock, plus what one function needs of its own (`own`: the remediation policy for
 * remediation, nothing for a function that has no policy). Built once per container and reused
 * across invocations.
 *
 * The modules that hold a client (client-node's ports, the EventBridge publisher) are loaded here
 * with `import()`, not imported at the top: a bundle's import then evaluates neither, and what a
 * cold start pays for them it pays at the first invocation, where the wiring runs anyway
 * (docs/deploy.md#bundles; test/contract/build.test.ts fails if one is imported statically again).
 *
 * Dry-run is decided here and nowhere else: `DRY_RUN=true`, or a function's own config saying so
 * (a remediation policy file's `dryRun: true`), selects the dry-run wiring (lib/dry-run.ts), every
 * port that acts wrapped in a recording decorator. No plan, fact or policy carries the flag. The
 * decorators of every function wired in this process on one cluster share one overlay of what
 * they would have written (adapters/kube/dry-run-overlay.ts), so the dry run predicts the live
 * run: the second node of a storm finds the first one out, as it would live.
 */
import { readFileSync } from 'node:fs';
import type { EventPublisher } from '../adapters/bus.ts';
import { busPublisher } from '../adapters/bus-select.ts';
import { NoChatNotifier, WebhookNotifier, type Notifier } from '../adapters/chat/notifier.ts';
import { currentClock, type Clock } from '../adapters/clock.ts';
import { DryRunOverlay, dryRunPorts } from '../adapters/kube/dry-run.ts';
import { kubeconfigSource, renewAt } from '../adapters/kubeconfig/source.ts';
import { reauthOn401 } from '../adapters/kube/reauth.ts';
import type { KubePorts, KubePortsOptions } from '../adapters/kube/index.ts';
import { ConfigError, loadFunctionsConfig, type FunctionsConfig } from '../config.ts';
import {
  CONFIG_REFRESH_MINUTES,
  configTextFromEnv,
  putParameterHint,
  resolveConfigParameters,
  type ConfigVariable,
  type ReadParameter,
} from './config-source.ts';
import { DryRunNotifier, DryRunPublisher } from './dry-run.ts';
import { createLogger, type Logger } from '../adapters/logger.ts';
import { meteredPublisher } from './metrics.ts';

export interface BaseDeps {
  config: FunctionsConfig;
  logger: Logger;
  kube: KubePorts;
  /** The bus. In a dry run reports still go out, marked; side effects are withheld (lib/dry-run.ts). */
  publisher: EventPublisher;
  notifier: Notifier;
  clock: Clock;
  /**
   * The environment with the policies kept in Parameter Store read in (lib/config-source.ts): what
   * a function reads a policy from after the wiring, as its own config did during it.
   */
  configEnv: NodeJS.ProcessEnv;
  /** Which wiring this is (for logs); nothing downstream branches on it. */
  dryRun: boolean;
  /**
   * When this wiring must be built again (the clock's epoch ms): its kubeconfig is temporary (ACK's
   * DescribeClusterUserKubeconfig) and `lazy` wires anew from here on. Absent: never.
   */
  renewAt?: number;
  /**
   * True once the API server refused this wiring's credentials (401, adapters/kube/reauth.ts):
   * `lazy` wires anew, fetching the kubeconfig again, at the next invocation.
   */
  stale?: () => boolean;
}

/** The shared deps and what one function wired of its own. */
export type FunctionDeps<Own extends object = object> = BaseDeps & Own;

/** A function's own configuration, from its environment; `dryRun: true` selects the dry-run wiring. */
export type OwnConfig<Own extends object> = (env: NodeJS.ProcessEnv) => {
  own: Own;
  dryRun?: boolean;
  kube?: Pick<KubePortsOptions, 'dra' | 'migParted'>;
  /** The function's words for a report's reason in a dry run ("Would drain …"); DryRunPublisher applies them. */
  wouldWords?: (reason: string) => string;
};

export async function wireFromEnv<Own extends object = object>(
  service: string,
  ownConfig?: OwnConfig<Own>,
  env: NodeJS.ProcessEnv = process.env,
): Promise<FunctionDeps<Own>> {
  const config = loadFunctionsConfig(env);
  const { kubePorts, loadKubeConfig } = await import('../adapters/kube/client.ts');
  const clock = currentClock();
  // Log lines carry the one clock's time too (virtual under simulate).
  const logger = createLogger({ service, level: config.LOG_LEVEL, now: () => clock.now() });
  // A kubeconfig from a secret store is fetched here, at the first invocation, with the function's
  // own role: the template holds only where it is (docs/deploy.md#cluster-access).
  const source = await kubeconfigSource(config, env, () => clock.now());
  const fetchedAt = clock.now();
  const fetched = source ? await source.fetch() : undefined;
  const kc = loadKubeConfig(
    fetched
      ? { kubeconfigText: fetched.text }
      : config.KUBECONFIG
        ? { kubeconfigPath: config.KUBECONFIG }
        : config.GPU_REFLEX_KUBECONFIG_TEXT
          ? { kubeconfigText: config.GPU_REFLEX_KUBECONFIG_TEXT }
          : { inCluster: true },
  );
  const renew = renewAt(fetchedAt, fetched?.expiresAt);
  if (source)
    logger.info('kubeconfig fetched', {
      source: source.name,
      ...(fetched?.expiresAt !== undefined
        ? { expiresAt: new Date(fetched.expiresAt).toISOString(), renewAt: new Date(renew!).toISOString() }
        : {}),
    });
  // Policies kept in Parameter Store become text here, read with this function's own role
  // (lib/config-source.ts); the function's own config then parses them as it parses a file.
  const params = await resolveConfigParameters(env, readConfigParameter);
  for (const m of params.missing)
    logger.warn(`no ${m.label} at ssm:${m.parameter}: the defaults apply`, {
      variable: m.variable,
      toSet: putParameterHint(m.parameter),
    });
  const mine = ownConfig ? ownConfig(params.env) : { own: {} as Own };
  const dryRun = config.DRY_RUN || mine.dryRun === true;
  // Events (kubectl describe node) carry the one clock's time and this function's name.
  // A 401 marks this wiring stale (the next invocation fetches the kubeconfig again) and is retried.
  let refused = false;
  const kube = reauthOn401(
    kubePorts(kc, {
      namespace: config.GPU_REFLEX_NAMESPACE,
      events: { clock, logger, instance: service },
      ...mine.kube,
    }),
    () => {
      if (!refused)
        logger.warn('the API server refused the credentials (401): the next invocation fetches the kubeconfig again', {
          source: source?.name ?? 'local',
        });
      refused = true;
    },
  );
  // What an invocation puts on the bus is counted into its metrics (lib/metrics.ts), dry runs' reports too.
  const bus = meteredPublisher(await busPublisher(config, () => clock.now(), env));
  const chat: Notifier =
    config.CHAT_WEBHOOK_URL && config.CHAT_PLATFORM
      ? new WebhookNotifier(config.CHAT_PLATFORM, config.CHAT_WEBHOOK_URL)
      : new NoChatNotifier();
  const renewBy =
    params.read.length > 0 ? Math.min(renew ?? Infinity, fetchedAt + CONFIG_REFRESH_MINUTES * 60_000) : renew;
  const base = {
    ...mine.own,
    config,
    configEnv: params.env,
    logger,
    clock,
    dryRun,
    ...(renewBy !== undefined ? { renewAt: renewBy } : {}),
    stale: () => refused,
  };
  // Not safeNotifier: carryOut must see a failed notice to keep it in the outbox; it logs it and
  // never lets it fail a remediation.
  if (!dryRun) return { ...base, kube, publisher: bus, notifier: chat };
  logger.info(
    'dry run: nothing in the cluster or in chat changes, no side-effect event is sent; reports are published ' +
      'marked dry-run',
    { DRY_RUN: config.DRY_RUN, byFunctionConfig: mine.dryRun === true },
  );
  return {
    ...base,
    kube: dryRunPorts(
      kube,
      (a) => {
        logger.info('dry run: would', { op: a.op, args: a.args });
        for (const l of wouldWriteListeners) l({ op: a.op, args: a.args, at: clock.now() });
      },
      sharedOverlay(kc.getCurrentCluster()?.server ?? '', clock),
    ),
    publisher: new DryRunPublisher(bus, logger, mine.wouldWords),
    notifier: new DryRunNotifier(logger),
  };
}

/** What a function needs to speak on the bus without touching the cluster (BusDeps): no Kubernetes client. */
export type BusDeps = Pick<BaseDeps, 'config' | 'logger' | 'publisher' | 'clock' | 'configEnv' | 'dryRun'>;

/**
 * The bus side of the wiring alone: config, the one clock, the logger, the publisher (metered; in a
 * dry run marked as wireFromEnv marks it) and the policies `only` names read from Parameter Store —
 * no kubeconfig fetched, no Kubernetes client loaded. For a path that must answer before the rest
 * loads (chatops acknowledging a command it hands to chatops-worker, within Slack's 3 s).
 */
export async function wireBus(
  service: string,
  only: readonly ConfigVariable[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<BusDeps> {
  const config = loadFunctionsConfig(env);
  const clock = currentClock();
  const logger = createLogger({ service, level: config.LOG_LEVEL, now: () => clock.now() });
  const params = await resolveConfigParameters(env, readConfigParameter, only);
  const bus = meteredPublisher(await busPublisher(config, () => clock.now(), env));
  const dryRun = config.DRY_RUN;
  const publisher = dryRun ? new DryRunPublisher(bus, logger) : bus;
  return { config, logger, clock, publisher, configEnv: params.env, dryRun };
}

/** A write a dry-run wiring refused at its port: the operation, its arguments, and when (its clock's ms). */
export interface WouldWrite {
  op: string;
  args: unknown[];
  at: number;
}
const wouldWriteListeners = new Set<(w: WouldWrite) => void>();

/**
 * Listens to every Kubernetes write any dry-run wiring of this process refuses (`gpu-reflex shadow`
 * lists them); returns the function that stops listening.
 */
export function onWouldWrite(listener: (w: WouldWrite) => void): () => void {
  wouldWriteListeners.add(listener);
  return () => void wouldWriteListeners.delete(listener);
}

/**
 * One overlay per cluster in this process: what every dry-run wiring here would have written. The
 * embedded stack runs all functions in one process, so remediate, the sweep and the approver see
 * each other's would-be writes as the live ones see the cluster's; a Lambda container keeps its own.
 */
const overlays = new Map<string, DryRunOverlay>();
function sharedOverlay(cluster: string, clock: Pick<Clock, 'now'>): DryRunOverlay {
  let o = overlays.get(cluster);
  if (!o) overlays.set(cluster, (o = new DryRunOverlay({ now: () => clock.now() })));
  return o;
}

/** Parameter Store, loaded at the first policy read from it (the SDK client stays off other cold starts). */
const readConfigParameter: ReadParameter = async (parameter, label) =>
  (await import('../adapters/ssm.ts')).readParameter(parameter, label);

/**
 * Wiring happens at the first invocation, not at import, once per container. A wiring that fails
 * (a bad config) is not kept: the next call wires again and reports it again. A wiring that says
 * when to renew (`renewAt` on its own `clock`: a temporary kubeconfig), or that is `stale` (the API
 * server refused its credentials), is built again by the first call from then on; calls already
 * holding the old one finish with it.
 */
export function lazy<T>(make: () => Promise<T>): () => Promise<T> {
  let v: Promise<T> | undefined;
  let due = (): boolean => false;
  return () => {
    if (v && due()) v = undefined;
    return (v ??= make().then(
      (made) => {
        const {
          renewAt: at,
          clock,
          stale,
        } = (made ?? {}) as { renewAt?: number; clock?: Pick<Clock, 'now'>; stale?: () => boolean };
        due = () => (at !== undefined && clock !== undefined && clock.now() >= at) || stale?.() === true;
        return made;
      },
      (err: unknown) => {
        v = undefined;
        throw err;
      },
    ));
  };
}

/**
 * A function's own configuration file, named by the environment variable `variable`: undefined when
 * unset; read and parsed with `parse` (which throws `errorClass` for bad content); any failure is a
 * ConfigError naming the variable, the file and what is wrong.
 */
export function configFileFromEnv<T>(
  env: NodeJS.ProcessEnv,
  variable: ConfigVariable,
  parse: (text: string, source: string) => T,
  errorClass: new (...args: never[]) => Error,
): T | undefined {
  const doc = configTextFromEnv(env, variable, (file) => readFileSync(file, 'utf8'));
  if (!doc) return undefined;
  try {
    return parse(doc.text, doc.source);
  } catch (err) {
    if (err instanceof errorClass) throw new ConfigError(`bad configuration: ${err.message}`);
    throw err;
  }
}
