import type { Cluster } from './cluster.ts';
import { ApiError } from './errors.ts';
import { FleetError, validateFleet, type ParsedFleet } from './fleet.ts';
import { COMPLETE_AFTER } from './lifecycle.ts';
import { NO_GPU_PROCESS, READY_AFTER } from './readiness.ts';
import { OPERATOR_MIG_PARTED_CONFIGMAP, OPERATOR_SHIPPED_MIG_CONFIG } from './mig-parted.ts';
import { resource, resourceForKind } from './resources.ts';
import { operatorClusterPolicy } from '../gpu-operator.ts';
import { gpuDeviceClass, gpuResourceSlice } from '../dra-slice.ts';
import { gpuSpecsOf } from '../node-gpus.ts';

/**
 * A fleet file (fleet.ts) made objects: each created through the same admission path as API clients
 * (quota, limit ranges, scheduling), in dependency order, so a seeded cluster is one the API server could
 * have produced.
 */

const expand = <T extends { name: string; count?: number }>(g: T): string[] =>
  g.count === undefined ? [g.name] : Array.from({ length: g.count }, (_, i) => `${g.name}-${i}`);

function container(
  w: { image?: string; requests?: Record<string, string | number>; limits?: Record<string, string | number> },
  name: string,
) {
  const resources = { ...(w.requests ? { requests: w.requests } : {}), ...(w.limits ? { limits: w.limits } : {}) };
  return {
    name,
    image: w.image ?? 'registry.local/gpu-reflex/sim:latest',
    ...(Object.keys(resources).length > 0 ? { resources } : {}),
  };
}

/** Creates the fleet's objects in dependency order; an API refusal names the object it hit. */
export function seedFleet(cluster: Cluster, fleet: ParsedFleet): void {
  const run = (what: string, fn: () => void) => {
    try {
      fn();
    } catch (err) {
      if (err instanceof ApiError) throw new FleetError(`seeding ${what}: ${err.message}`);
      throw err;
    }
  };
  const create = (plural: string, ns: string, body: object) => cluster.create(resource(plural), ns, body);
  for (const ns of [
    'default',
    'kube-system',
    'kube-node-lease',
    'kube-public',
    ...fleet.namespaces.map((n) => n.name),
  ]) {
    if (!cluster.store.get('namespaces', '', ns))
      run(`namespace ${ns}`, () =>
        create('namespaces', '', {
          metadata: { name: ns, labels: fleet.namespaces.find((n) => n.name === ns)?.labels },
        }),
      );
  }
  for (const g of fleet.nodes) {
    for (const name of expand(g)) {
      run(`node ${name}`, () =>
        create('nodes', '', {
          metadata: {
            name,
            labels: {
              'kubernetes.io/hostname': name,
              'kubernetes.io/os': 'linux',
              'kubernetes.io/arch': 'amd64',
              ...g.labels,
            },
            ...(g.annotations ? { annotations: g.annotations } : {}),
          },
          spec: { ...(g.unschedulable ? { unschedulable: true } : {}), ...(g.taints ? { taints: g.taints } : {}) },
          status: {
            capacity: { pods: '110', ...(g.capacity ?? g.allocatable) },
            allocatable: { pods: '110', ...g.allocatable },
            ...(g.ready === false
              ? { conditions: [{ type: 'Ready', status: 'False', reason: 'KubeletNotReady' }] }
              : {}),
          },
        }),
      );
    }
  }
  // DRA nodes: the driver's kubelet plugin publishes each node's ResourceSlice, its Helm chart the DeviceClass.
  for (const driver of new Set(fleet.nodes.flatMap((g) => (g.draDriver ? [g.draDriver] : [])))) {
    if (!cluster.store.get('deviceclasses.resource.k8s.io', '', driver))
      run(`deviceclass ${driver}`, () => create('deviceclasses', '', gpuDeviceClass(driver)));
  }
  for (const g of fleet.nodes.filter((x) => x.draDriver))
    for (const name of expand(g)) {
      const node = cluster.store.node(name)!;
      const at = new Date(cluster.clock.now()).toISOString();
      run(`resourceslice ${name}`, () =>
        create('resourceslices', '', gpuResourceSlice(name, g.draDriver!, gpuSpecsOf(node), at)),
      );
    }
  // A fleet with MIG nodes under the mixed strategy runs NVIDIA's mig-manager (the simulated one in
  // mig-manager.ts): the GPU Operator installs its namespace, and its own default mig-parted config
  // only when the ClusterPolicy names no other (gpu-operator object_controls.go createConfigMap).
  if (fleet.nodes.some((g) => g.labels?.['nvidia.com/mig.strategy'] === 'mixed')) {
    const { namespace, name, key } = OPERATOR_MIG_PARTED_CONFIGMAP;
    if (!cluster.store.get('namespaces', '', namespace))
      run(`namespace ${namespace}`, () => create('namespaces', '', { metadata: { name: namespace } }));
    if (fleet.migManagerConfig === name && !cluster.store.get('configmaps', namespace, name))
      run(`configmap ${namespace}/${name}`, () =>
        create('configmaps', namespace, { metadata: { name }, data: { [key]: OPERATOR_SHIPPED_MIG_CONFIG } }),
      );
    // Its ClusterPolicy, whose spec.migManager.config.name says which ConfigMap mig-manager reads.
    if (!cluster.store.get('clusterpolicies', '', 'cluster-policy'))
      run('clusterpolicy cluster-policy', () =>
        create('clusterpolicies', '', operatorClusterPolicy(fleet.migManagerConfig)),
      );
  }
  for (const ns of fleet.namespaces) {
    for (const lr of ns.limitRanges ?? [])
      run(`limitrange ${ns.name}/${lr.name}`, () =>
        create('limitranges', ns.name, { metadata: { name: lr.name }, spec: { limits: lr.limits } }),
      );
    for (const q of ns.quotas ?? [])
      run(`resourcequota ${ns.name}/${q.name}`, () =>
        create('resourcequotas', ns.name, { metadata: { name: q.name }, spec: { hard: q.hard } }),
      );
  }
  // The PriorityClasses the pod groups name, at the priority the group gives (Priority admission resolves a pod's
  // priority from its class and refuses a class that does not exist: admission.ts).
  const classes = new Map<string, number>();
  for (const g of fleet.pods) if (g.priorityClassName) classes.set(g.priorityClassName, g.priority ?? 0);
  for (const [name, value] of classes)
    if (!cluster.store.get('priorityclasses.scheduling.k8s.io', '', name))
      run(`priorityclass ${name}`, () => create('priorityclasses', '', { metadata: { name }, value }));
  for (const p of fleet.podDisruptionBudgets) {
    const { name, namespace, ...spec } = p;
    run(`poddisruptionbudget ${namespace}/${name}`, () =>
      create('poddisruptionbudgets', namespace, { metadata: { name }, spec }),
    );
  }
  for (const d of fleet.daemonSets) {
    const labels = { 'app.kubernetes.io/name': d.name, ...d.labels };
    run(`daemonset ${d.namespace}/${d.name}`, () =>
      create('daemonsets', d.namespace, {
        metadata: { name: d.name, labels },
        spec: {
          selector: { matchLabels: labels },
          template: {
            metadata: { labels },
            spec: {
              containers: [container(d, d.name)],
              ...(d.tolerations ? { tolerations: d.tolerations } : {}),
              ...(d.nodeSelector ? { nodeSelector: d.nodeSelector } : {}),
              ...(d.terminationGracePeriodSeconds !== undefined
                ? { terminationGracePeriodSeconds: d.terminationGracePeriodSeconds }
                : {}),
            },
          },
        },
      }),
    );
  }
  const owners = new Map<string, string>();
  for (const g of fleet.pods) {
    const owner = g.owner
      ? {
          kind: g.owner.kind,
          name: g.owner.name,
          uid: owners.get(`${g.namespace}/${g.owner.kind}/${g.owner.name}`) ?? cluster.uid(),
        }
      : undefined;
    if (owner) owners.set(`${g.namespace}/${owner.kind}/${owner.name}`, owner.uid);
    for (const name of expand(g)) {
      run(`pod ${g.namespace}/${name}`, () =>
        create('pods', g.namespace, {
          metadata: {
            name,
            labels: g.labels,
            ...(g.completeAfterSeconds !== undefined || g.readyAfterSeconds !== undefined || g.gpuProcess === false
              ? {
                  annotations: {
                    ...(g.gpuProcess === false ? { [NO_GPU_PROCESS]: 'true' } : {}),
                    ...(g.completeAfterSeconds !== undefined
                      ? { [COMPLETE_AFTER]: String(g.completeAfterSeconds) }
                      : {}),
                    ...(g.readyAfterSeconds !== undefined ? { [READY_AFTER]: String(g.readyAfterSeconds) } : {}),
                  },
                }
              : {}),
            ...(owner
              ? {
                  generateName: `${owner.name}-`,
                  ownerReferences: [
                    {
                      apiVersion: owner.kind === 'Job' ? 'batch/v1' : 'apps/v1',
                      kind: owner.kind,
                      name: owner.name,
                      uid: owner.uid,
                      controller: true,
                      blockOwnerDeletion: true,
                    },
                  ],
                }
              : {}),
          },
          spec: {
            containers: [
              {
                ...container(g, 'main'),
                ...(g.resourceClaims
                  ? {
                      resources: {
                        ...container(g, 'main').resources,
                        claims: g.resourceClaims.map((c) => ({ name: c.name })),
                      },
                    }
                  : {}),
              },
            ],
            ...(g.resourceClaims ? { resourceClaims: g.resourceClaims } : {}),
            ...(g.node ? { nodeName: g.node } : {}),
            ...(g.tolerations ? { tolerations: g.tolerations } : {}),
            ...(g.nodeSelector ? { nodeSelector: g.nodeSelector } : {}),
            ...(g.terminationGracePeriodSeconds !== undefined
              ? { terminationGracePeriodSeconds: g.terminationGracePeriodSeconds }
              : {}),
            ...(g.emptyDir ? { volumes: [{ name: 'scratch', emptyDir: {} }] } : {}),
            ...(g.priority !== undefined ? { priority: g.priority } : {}),
            ...(g.priorityClassName ? { priorityClassName: g.priorityClassName } : {}),
          },
        }),
      );
    }
  }
  for (const o of fleet.objects) {
    const r = resourceForKind(o.kind);
    if (!r) throw new FleetError(`objects: kind ${o.kind} is not served by the simulated cluster`);
    run(`${o.kind} ${o.metadata.name}`, () => cluster.create(r, o.metadata.namespace ?? 'default', o));
  }
}

/** A synthetic fleet of any size for scale tests and benchmarks: A100 nodes, 4 GPU pods each. */
export function syntheticFleet(nodes: number, podsPerNode = 4): ParsedFleet {
  return validateFleet({
    nodes: [
      {
        name: 'gpu',
        count: nodes,
        labels: { accelerator: 'nvidia-a100', 'nvidia.com/gpu.product': 'NVIDIA-A100-SXM4-80GB' },
        allocatable: { cpu: '96', memory: '1000Gi', 'nvidia.com/gpu': '8' },
      },
    ],
    namespaces: [{ name: 'train' }],
    pods: [
      {
        name: 'worker',
        namespace: 'train',
        count: nodes * podsPerNode,
        owner: { kind: 'Job', name: 'worker' },
        requests: { cpu: '8', memory: '64Gi', 'nvidia.com/gpu': '2' },
      },
    ],
  });
}
