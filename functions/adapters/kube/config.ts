/**
 * Cluster access for the functions. Three sources, chosen explicitly so a Lambda never silently
 * falls back to a developer's ~/.kube/config:
 *  - `kubeconfigText`: a kubeconfig passed as a secret value (Lambda reading Secrets Manager);
 *  - `kubeconfigPath`: a kubeconfig file (laptop, the embedded stack);
 *  - `inCluster`: the pod's service account (running inside the cluster).
 * The simulated cluster serves plain http; its kubeconfig already carries
 * `insecure-skip-tls-verify: true`, which the client needs for an http:// server.
 */
import { CoordinationV1Api, CoreV1Api, CustomObjectsApi, EventsV1Api, type KubeConfig } from '@kubernetes/client-node';
import * as z from 'zod';
import { BadInputError } from '../errors.ts';
import { PooledKubeConfig } from './pooled-agent.ts';

export const KubeAccessSchema = z
  .object({
    kubeconfigPath: z.string().min(1).optional(),
    kubeconfigText: z.string().min(1).optional(),
    inCluster: z.boolean().optional(),
    /** Context to use from the kubeconfig; its current-context when omitted. */
    context: z.string().min(1).optional(),
  })
  .strict();
export type KubeAccess = z.infer<typeof KubeAccessSchema>;

export function loadKubeConfig(access: KubeAccess): KubeConfig {
  const parsed = KubeAccessSchema.safeParse(access);
  if (!parsed.success) {
    throw new BadInputError(
      `kube access: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    );
  }
  const a = parsed.data;
  const sources = [a.kubeconfigPath, a.kubeconfigText, a.inCluster ? true : undefined].filter((s) => s !== undefined);
  if (sources.length !== 1) {
    throw new BadInputError('kube access: give exactly one of kubeconfigPath, kubeconfigText, inCluster', {
      what: 'kube access',
    });
  }
  if (a.inCluster && !process.env.KUBERNETES_SERVICE_HOST) {
    // loadFromCluster would otherwise build a config for https://undefined:undefined.
    throw new BadInputError('kube access: inCluster, but KUBERNETES_SERVICE_HOST is not set (not running in a pod)', {
      what: 'kube access',
    });
  }
  // Keep-alive connections: the stock KubeConfig opens one TCP (and TLS) connection per call.
  const kc = new PooledKubeConfig();
  try {
    if (a.kubeconfigText !== undefined) kc.loadFromString(a.kubeconfigText);
    else if (a.kubeconfigPath !== undefined) kc.loadFromFile(a.kubeconfigPath);
    else kc.loadFromCluster();
  } catch (err) {
    // The secret's text is never echoed: only which source failed.
    const source =
      a.kubeconfigText !== undefined
        ? 'kubeconfigText'
        : a.kubeconfigPath !== undefined
          ? `kubeconfigPath ${a.kubeconfigPath}`
          : 'inCluster';
    throw new BadInputError(`kube access: cannot load ${source}`, { what: 'kube access', cause: err });
  }
  if (a.context !== undefined) kc.setCurrentContext(a.context);
  if (kc.getCurrentCluster() === null) {
    throw new BadInputError('kube access: the kubeconfig names no current cluster', { what: 'kube access' });
  }
  return kc;
}

/** The API groups the adapters use, built once per KubeConfig. */
export interface KubeApis {
  core: CoreV1Api;
  coordination: CoordinationV1Api;
  events: EventsV1Api;
  /** resource.k8s.io (DRA), whose versions differ from cluster to cluster. */
  custom: CustomObjectsApi;
}

export function makeKubeApis(kc: KubeConfig): KubeApis {
  return {
    core: kc.makeApiClient(CoreV1Api),
    coordination: kc.makeApiClient(CoordinationV1Api),
    events: kc.makeApiClient(EventsV1Api),
    custom: kc.makeApiClient(CustomObjectsApi),
  };
}
