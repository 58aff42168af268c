import { CoreV1Api } from '@kubernetes/client-node';
import { loadKubeConfig } from '../../functions/adapters/kube/config.ts';
import type { Node, Pod } from './kube/types.ts';
import { COMPLETE_AFTER } from './kube/lifecycle.ts';
import type { PodArrival } from './scenario.ts';

/**
 * The stack's own Kubernetes client: the same @kubernetes/client-node the functions use, on the
 * simulated cluster's kubeconfig or a real one (`--kubeconfig`). Objects come back as the API sent
 * them (dates as RFC 3339 text), for the report and the per-node NVML/proc generation.
 */
export class StackKube {
  private readonly core: CoreV1Api;

  constructor(kubeconfigPath: string) {
    this.core = loadKubeConfig({ kubeconfigPath }).makeApiClient(CoreV1Api);
  }

  async nodes(): Promise<Node[]> {
    return plain<Node[]>((await this.core.listNode()).items);
  }

  async pods(): Promise<Pod[]> {
    return plain<Pod[]>((await this.core.listPodForAllNamespaces()).items);
  }

  async podsOn(node: string): Promise<Pod[]> {
    return plain<Pod[]>((await this.core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${node}` })).items);
  }

  /** Creates `count` pods named `<name>-<i>`; returns the names created. */
  async createPods(a: PodArrival): Promise<string[]> {
    const names: string[] = [];
    for (let i = 0; i < a.count; i++) {
      const name = a.count === 1 ? a.name : `${a.name}-${i}`;
      const resources = { requests: strings(a.requests), ...(a.limits ? { limits: strings(a.limits) } : {}) };
      await this.core.createNamespacedPod({
        namespace: a.namespace,
        body: {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name, labels: { app: a.name, ...a.labels }, ...(a.completeAfterSeconds !== undefined ? { annotations: { [COMPLETE_AFTER]: String(a.completeAfterSeconds) } } : {}) },
          spec: {
            containers: [{ name: 'main', image: 'registry.local/gpu-reflex/sim:latest', resources }],
            ...(a.nodeSelector ? { nodeSelector: a.nodeSelector } : {}),
            ...(a.tolerations ? { tolerations: a.tolerations } : {}),
          },
        },
      });
      names.push(name);
    }
    return names;
  }
}

const strings = (r: Record<string, string | number>) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, String(v)]));
/** client-node returns class instances with Date fields; the report wants the API's JSON. */
const plain = <T>(v: unknown): T => JSON.parse(JSON.stringify(v)) as T;
