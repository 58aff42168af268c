import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { fromKubeError } from '../../functions/adapters/errors.ts';
import { loadKubeConfig } from '../../functions/adapters/kube/config.ts';
import type { Node, Pod } from './kube/types.ts';
import { COMPLETE_AFTER } from './kube/lifecycle.ts';
import { GROUP_NAME_ANNOTATION as VOLCANO_GROUP_ANNOTATION } from './kube/volcano.ts';
import type { PodArrival } from './scenario.ts';

/**
 * The stack's own Kubernetes client: the same @kubernetes/client-node the functions use, on the
 * simulated cluster's kubeconfig or a real one (`--kubeconfig`). Objects come back as the API sent
 * them (dates as RFC 3339 text), for the report and the per-node NVML/proc generation.
 */
export class StackKube {
  private readonly core: CoreV1Api;
  private readonly custom: CustomObjectsApi;

  constructor(kubeconfigPath: string) {
    const kc = loadKubeConfig({ kubeconfigPath });
    this.core = kc.makeApiClient(CoreV1Api);
    this.custom = kc.makeApiClient(CustomObjectsApi);
  }

  async nodes(): Promise<Node[]> {
    return plain<Node[]>((await named(this.core.listNode(), 'listing nodes')).items);
  }

  async pods(): Promise<Pod[]> {
    return plain<Pod[]>((await named(this.core.listPodForAllNamespaces(), 'listing pods')).items);
  }

  async podsOn(node: string): Promise<Pod[]> {
    const list = this.core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${node}` });
    return plain<Pod[]>((await named(list, `listing the pods on ${node}`)).items);
  }

  /**
   * Creates `count` pods named `<name>-<i>`; returns the names created and the ones admission
   * refused (a ResourceQuota, 403), with the API server's words: their controller would retry.
   */
  async createPods(
    a: PodArrival,
    only?: string,
  ): Promise<{ created: string[]; refused: { name: string; reason: string }[] }> {
    const names: string[] = [];
    const refused: { name: string; reason: string }[] = [];
    if (a.podGroup && only === undefined) await this.createPodGroup(a.namespace, a.podGroup);
    for (let i = 0; i < a.count; i++) {
      const name = a.count === 1 ? a.name : `${a.name}-${i}`;
      if (only !== undefined && name !== only) continue;
      const resources = { requests: strings(a.requests), ...(a.limits ? { limits: strings(a.limits) } : {}) };
      const body = {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: {
          name,
          labels: { app: a.name, ...a.labels },
          annotations: {
            ...(a.completeAfterSeconds !== undefined ? { [COMPLETE_AFTER]: String(a.completeAfterSeconds) } : {}),
            ...(a.podGroup ? { [VOLCANO_GROUP_ANNOTATION]: a.podGroup.name } : {}),
          },
        },
        spec: {
          containers: [
            {
              name: 'main',
              image: 'registry.local/gpu-reflex/sim:latest',
              resources: a.resourceClaims
                ? { ...resources, claims: a.resourceClaims.map((c) => ({ name: c.name })) }
                : resources,
            },
          ],
          ...(a.resourceClaims ? { resourceClaims: a.resourceClaims } : {}),
          ...(a.nodeSelector ? { nodeSelector: a.nodeSelector } : {}),
          ...(a.tolerations ? { tolerations: a.tolerations } : {}),
          ...(a.schedulingGates ? { schedulingGates: a.schedulingGates.map((g) => ({ name: g })) } : {}),
          ...(a.podGroup ? { schedulerName: 'volcano' } : {}),
          ...(a.antiAffinity ? { affinity: antiAffine(a.name) } : {}),
        },
      };
      try {
        await this.core.createNamespacedPod({ namespace: a.namespace, body });
      } catch (err) {
        const e = err as { code?: number; body?: string };
        // The API server's own words (`namespaces "research" not found`), not client-node's `HTTP-Code: 404`.
        if (e.code !== 403) throw fromKubeError(err, `creating pod ${a.namespace}/${name}`);
        let reason = String(e.body ?? 'forbidden');
        try {
          reason = (JSON.parse(reason) as { message?: string }).message ?? reason;
        } catch {
          // the body as it came
        }
        refused.push({ name, reason });
        continue;
      }
      names.push(name);
    }
    return { created: names, refused };
  }

  /** Creates a Volcano PodGroup (scheduling.volcano.sh/v1beta1), as Volcano's job controller or a user does. */
  private async createPodGroup(namespace: string, g: NonNullable<PodArrival['podGroup']>): Promise<void> {
    const body = {
      apiVersion: 'scheduling.volcano.sh/v1beta1',
      kind: 'PodGroup',
      metadata: { name: g.name, namespace },
      spec: { minMember: g.minMember, ...(g.minResources ? { minResources: strings(g.minResources) } : {}) },
    };
    const call = this.custom.createNamespacedCustomObject({
      group: 'scheduling.volcano.sh',
      version: 'v1beta1',
      namespace,
      plural: 'podgroups',
      body,
    });
    await named(call, `creating PodGroup ${namespace}/${g.name}`);
  }

  /** Removes every scheduling gate of the pods `name` or `name-<i>` in `namespace` (gates may only be removed). */
  async ungate(namespace: string, name: string): Promise<string[]> {
    const mine = new RegExp(`^${name.replace(/[.]/g, '\\.')}(-[0-9]+)?$`);
    const out: string[] = [];
    for (const pod of (await this.core.listNamespacedPod({ namespace })).items) {
      const n = pod.metadata?.name ?? '';
      if (!mine.test(n) || (pod.spec?.schedulingGates ?? []).length === 0) continue;
      await this.core.replaceNamespacedPod({
        name: n,
        namespace,
        body: { ...pod, spec: { ...pod.spec!, schedulingGates: [] } },
      });
      out.push(n);
    }
    return out;
  }
}

/** A failed call as an AdapterError whose message says what was done and the Status's message. */
async function named<T>(call: Promise<T>, what: string): Promise<T> {
  try {
    return await call;
  } catch (err) {
    throw fromKubeError(err, what);
  }
}

const strings = (r: Record<string, string | number>) =>
  Object.fromEntries(Object.entries(r).map(([k, v]) => [k, String(v)]));
/** client-node returns class instances with Date fields; the report wants the API's JSON. */
const plain = <T>(v: unknown): T => JSON.parse(JSON.stringify(v)) as T;

/** Required anti-affinity on `kubernetes.io/hostname` against pods with the same `app` label: one per node. */
const antiAffine = (app: string) => ({
  podAntiAffinity: {
    requiredDuringSchedulingIgnoredDuringExecution: [
      { labelSelector: { matchLabels: { app } }, topologyKey: 'kubernetes.io/hostname' },
    ],
  },
});
