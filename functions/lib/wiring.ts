/**
 * Cold-start wiring shared by the functions: config → logger, Kubernetes ports, bus publishers,
 * notifier, remediation policy. Built once per container and reused across invocations.
 *
 * Dry-run is decided here and nowhere else: `DRY_RUN=true` or a policy file's `dryRun: true`
 * selects the dry-run wiring (lib/dry-run.ts), every port that acts wrapped in a recording
 * decorator. No plan, fact or policy carries the flag.
 */
import { readFileSync } from 'node:fs';
import { EventBridgePublisher, type EventPublisher } from '../adapters/bus.ts';
import { RecordingNotifier, safeNotifier, WebhookNotifier, type Notifier } from '../adapters/chat/notifier.ts';
import { currentClock, type Clock } from '../adapters/clock.ts';
import { dryRunPorts } from '../adapters/kube/dry-run.ts';
import { kubePorts, loadKubeConfig, type KubePorts } from '../adapters/kube/index.ts';
import { loadFunctionsConfig, type FunctionsConfig } from '../config.ts';
import { DEFAULT_POLICY, type Policy } from '../remediate/policy.ts';
import { loadPolicyFile } from '../remediate/policy-file.ts';
import { DryRunNotifier, DryRunPublisher } from './dry-run.ts';
import { createLogger, type Logger } from './logger.ts';

export interface FunctionDeps {
  config: FunctionsConfig;
  logger: Logger;
  kube: KubePorts;
  /** The bus. In a dry run reports still go out, marked; side effects are withheld (lib/dry-run.ts). */
  publisher: EventPublisher;
  notifier: Notifier;
  policy: Policy;
  clock: Clock;
  /** Which wiring this is (for logs and the local report); nothing downstream branches on it. */
  dryRun: boolean;
}

export function wireFromEnv(service: string, env: NodeJS.ProcessEnv = process.env): FunctionDeps {
  const config = loadFunctionsConfig(env);
  const logger = createLogger({ service, level: config.LOG_LEVEL });
  const kc = loadKubeConfig(
    config.KUBECONFIG ? { kubeconfigPath: config.KUBECONFIG } : config.GPU_REFLEX_KUBECONFIG_TEXT ? { kubeconfigText: config.GPU_REFLEX_KUBECONFIG_TEXT } : { inCluster: true },
  );
  const file = config.REMEDIATION_POLICY_FILE ? loadPolicyFile(readFileSync(config.REMEDIATION_POLICY_FILE, 'utf8'), config.REMEDIATION_POLICY_FILE) : { policy: DEFAULT_POLICY, dryRun: false };
  const dryRun = config.DRY_RUN || file.dryRun;
  const kube = kubePorts(kc, { namespace: config.GPU_REFLEX_NAMESPACE });
  const bus = new EventBridgePublisher(config.EVENT_BUS_NAME);
  const chat: Notifier = config.CHAT_WEBHOOK_URL && config.CHAT_PLATFORM ? new WebhookNotifier(config.CHAT_PLATFORM, config.CHAT_WEBHOOK_URL) : new RecordingNotifier();
  const base = { config, logger, policy: file.policy, clock: currentClock(), dryRun };
  if (!dryRun) return { ...base, kube, publisher: bus, notifier: safeNotifier(chat, logger) };
  logger.info('dry run: nothing in the cluster, on the bus or in chat changes; reports are published marked dry-run', { DRY_RUN: config.DRY_RUN, policyFile: file.dryRun });
  return {
    ...base,
    kube: dryRunPorts(kube, (a) => logger.info('dry run: would', { op: a.op, args: a.args })),
    publisher: new DryRunPublisher(bus, logger),
    notifier: new DryRunNotifier(logger),
  };
}
/** Wiring happens at the first invocation, not at import, so a bad config is reported per call. */
export function lazy<T>(make: () => T): () => T {
  let v: T | undefined;
  return () => (v ??= make());
}
