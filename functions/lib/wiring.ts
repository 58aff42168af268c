/**
 * Cold-start wiring shared by the functions: config → logger, Kubernetes ports (wrapped in the
 * dry-run decorator when DRY_RUN is on), bus publisher, notifier, remediation policy. Built once
 * per container and reused across invocations.
 */
import { readFileSync } from 'node:fs';
import { EventBridgePublisher, RecordingPublisher, type EventPublisher } from '../adapters/bus.ts';
import { RecordingNotifier, safeNotifier, WebhookNotifier, type Notifier } from '../adapters/chat/notifier.ts';
import { currentClock, type Clock } from '../adapters/clock.ts';
import { dryRunPorts } from '../adapters/kube/dry-run.ts';
import { kubePorts, loadKubeConfig, type KubePorts } from '../adapters/kube/index.ts';
import { loadFunctionsConfig, type FunctionsConfig } from '../config.ts';
import { DEFAULT_POLICY, type Policy } from '../remediate/policy.ts';
import { loadPolicy } from '../remediate/policy-file.ts';
import { createLogger, type Logger } from './logger.ts';

export interface FunctionDeps {
  config: FunctionsConfig;
  logger: Logger;
  kube: KubePorts;
  publisher: EventPublisher;
  notifier: Notifier;
  policy: Policy;
  clock: Clock;
}

export function wireFromEnv(service: string, env: NodeJS.ProcessEnv = process.env): FunctionDeps {
  const config = loadFunctionsConfig(env);
  const logger = createLogger({ service, level: config.LOG_LEVEL });
  const kc = loadKubeConfig(
    config.KUBECONFIG ? { kubeconfigPath: config.KUBECONFIG } : config.GPU_REFLEX_KUBECONFIG_TEXT ? { kubeconfigText: config.GPU_REFLEX_KUBECONFIG_TEXT } : { inCluster: true },
  );
  let kube = kubePorts(kc, { namespace: config.GPU_REFLEX_NAMESPACE });
  // Dry run is one decorator chosen here, not a flag checked in every step.
  if (config.DRY_RUN) kube = dryRunPorts(kube, (a) => logger.info('dry run: would', { op: a.op, args: a.args }));
  const publisher: EventPublisher = config.DRY_RUN ? new RecordingPublisher() : new EventBridgePublisher(config.EVENT_BUS_NAME);
  const inner: Notifier = config.CHAT_WEBHOOK_URL && config.CHAT_PLATFORM ? new WebhookNotifier(config.CHAT_PLATFORM, config.CHAT_WEBHOOK_URL) : new RecordingNotifier();
  const policy = config.REMEDIATION_POLICY_FILE ? loadPolicy(readFileSync(config.REMEDIATION_POLICY_FILE, 'utf8'), config.REMEDIATION_POLICY_FILE) : DEFAULT_POLICY;
  return { config, logger, kube, publisher, notifier: safeNotifier(inner, logger), policy: config.DRY_RUN ? { ...policy, dryRun: true } : policy, clock: currentClock() };
}

/** Wiring happens at the first invocation, not at import, so a bad config is reported per call. */
export function lazy<T>(make: () => T): () => T {
  let v: T | undefined;
  return () => (v ??= make());
}
