/**
 * The simulated scheduler (infra/local/kube, written from Kubernetes' sources) against the pool
 * autoscaler's own fit rule (functions/autoscale/core/fit.ts `whyNot`, reached through the kube
 * adapter's `toPodInfo` as the autoscaler reaches it): for the same pod and a node of a pool, do
 * they agree it fits? Where they do not, the simulator is the one that follows Kubernetes
 * (issue #28). The cases that once disagreed (the findings) are kept in their own table, each
 * row a rule the product must keep.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { toPodInfo } from '../../functions/adapters/kube/convert.ts';
import type { Taint } from '../../functions/adapters/kube/model.ts';
import { parseQuantity as productQuantity } from '../../functions/adapters/kube/quantity.ts';
import { whyNot } from '../../functions/autoscale/core/fit.ts';
import { freeOn, unfitReason } from '../../infra/local/kube/scheduler.ts';
import type { Node, Pod } from '../../infra/local/kube/types.ts';

interface Case {
  what: string;
  spec: Record<string, unknown>;
  node?: {
    labels?: Record<string, string>;
    taints?: Taint[];
    allocatable?: Record<string, string>;
  };
}

const GPU = { requests: { 'nvidia.com/gpu': '1' }, limits: { 'nvidia.com/gpu': '1' } };
const main = (resources: Record<string, unknown> = GPU) => [{ name: 'main', image: 'x', resources }];
const terms = (...t: unknown[]) => ({
  nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: t } },
});
const NODE = {
  labels: { pool: 'a100', 'nvidia.com/gpu.count': '8' },
  taints: [],
  allocatable: { cpu: '4', memory: '16Gi', pods: '110', 'nvidia.com/gpu': '8' },
};

function verdicts(c: Case): { simulator: boolean; product: boolean } {
  const n = { ...NODE, ...c.node };
  const node: Node = {
    metadata: { name: 'pool-node' },
    spec: { taints: n.taints },
    status: { allocatable: n.allocatable },
  } as unknown as Node;
  node.metadata.labels = n.labels;
  const pod = { metadata: { name: 'p', namespace: 'work' }, spec: { containers: main(), ...c.spec } };
  const simulator = unfitReason(pod as unknown as Pod, node, freeOn(node, [])) === undefined;
  const info = toPodInfo(pod as unknown as V1Pod);
  const allocatable = Object.fromEntries(Object.entries(n.allocatable).map(([k, v]) => [k, productQuantity(v)]));
  const constraints = {
    requests: { ...(info.requests ?? {}) },
    nodeSelector: info.nodeSelector,
    tolerations: info.tolerations,
    requiredTerms: info.requiredNodeTerms,
  };
  const product = whyNot(constraints, { labels: n.labels, taints: n.taints, allocatable }) === undefined;
  return { simulator, product };
}

const agree: [Case, boolean][] = [
  [{ what: 'a GPU pod on a GPU node', spec: {} }, true],
  [{ what: 'more GPUs than a node has', spec: { containers: main({ requests: { 'nvidia.com/gpu': '9' } }) } }, false],
  [{ what: 'a nodeSelector the pool has', spec: { nodeSelector: { pool: 'a100' } } }, true],
  [{ what: 'a nodeSelector the pool lacks', spec: { nodeSelector: { pool: 't4' } } }, false],
  [
    { what: 'an untolerated NoSchedule taint', spec: {}, node: { taints: [{ key: 'gpu', effect: 'NoSchedule' }] } },
    false,
  ],
  [
    { what: 'a PreferNoSchedule taint', spec: {}, node: { taints: [{ key: 'gpu', effect: 'PreferNoSchedule' }] } },
    true,
  ],
  [
    {
      what: 'an Exists toleration without a key',
      spec: { tolerations: [{ operator: 'Exists' }] },
      node: { taints: [{ key: 'gpu', value: 'x', effect: 'NoExecute' }] },
    },
    true,
  ],
  [
    {
      what: 'an Equal toleration with another value',
      spec: { tolerations: [{ key: 'gpu', value: 'y' }] },
      node: { taints: [{ key: 'gpu', value: 'x', effect: 'NoSchedule' }] },
    },
    false,
  ],
  [
    {
      what: 'Gt on an integer label',
      spec: { affinity: terms({ matchExpressions: [{ key: 'nvidia.com/gpu.count', operator: 'Gt', values: ['4'] }] }) },
    },
    true,
  ],
  [
    {
      what: 'NotIn on a missing label',
      spec: { affinity: terms({ matchExpressions: [{ key: 'zone', operator: 'NotIn', values: ['a'] }] }) },
    },
    true,
  ],
  [
    {
      what: 'a plain init container larger than the app',
      spec: { initContainers: [{ name: 'i', image: 'x', resources: { requests: { cpu: '5' } } }] },
    },
    false,
  ],
  [
    {
      what: 'runtime overhead past the node',
      spec: { containers: main({ ...GPU, requests: { ...GPU.requests, cpu: '3' } }), overhead: { cpu: '2' } },
    },
    false,
  ],
];

/**
 * Once findings (issue #28): the autoscaler said these pods fit a pool Kubernetes would never
 * place them on, and grew pools for them. Each row fails again if its rule leaves the product
 * (functions/adapters/kube/convert.ts podRequests and requiredNodeTerms, functions/autoscale/core/fit.ts).
 */
const formerFindings: [Case, boolean][] = [
  [
    {
      what: "a sidecar's requests: KEP-753 adds a restartable init container to the containers' sum",
      spec: {
        containers: main({ ...GPU, requests: { ...GPU.requests, cpu: '2' } }),
        initContainers: [
          { name: 'proxy', image: 'x', restartPolicy: 'Always', resources: { requests: { cpu: '2500m' } } },
        ],
      },
    },
    false,
  ],
  [
    {
      what: 'a plain init container after a sidecar needs its own requests plus the sidecar’s',
      spec: {
        containers: main({ ...GPU, requests: { ...GPU.requests, cpu: '1' } }),
        initContainers: [
          { name: 'proxy', image: 'x', restartPolicy: 'Always', resources: { requests: { cpu: '1' } } },
          { name: 'warm', image: 'x', resources: { requests: { cpu: '3500m' } } },
        ],
      },
    },
    false,
  ],
  [
    {
      what: 'a sidecar that fits beside the app',
      spec: {
        containers: main({ ...GPU, requests: { ...GPU.requests, cpu: '2' } }),
        initContainers: [
          { name: 'proxy', image: 'x', restartPolicy: 'Always', resources: { requests: { cpu: '1500m' } } },
        ],
      },
    },
    true,
  ],
  [
    {
      what: 'matchFields: a pod pinned to another node by metadata.name (as the DaemonSet controller pins its pods)',
      spec: { affinity: terms({ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['gpu-node-7'] }] }) },
    },
    false,
  ],
  [
    {
      what: 'matchFields NotIn another node’s name',
      spec: { affinity: terms({ matchFields: [{ key: 'metadata.name', operator: 'NotIn', values: ['gpu-node-7'] }] }) },
    },
    true,
  ],
  [
    {
      what: 'an empty node selector term matches no node (NodeSelectorTerm API docs)',
      spec: { affinity: terms({ matchExpressions: [] }) },
    },
    false,
  ],
  [
    {
      what: 'an operator Kubernetes does not know makes its term select nothing',
      spec: {
        affinity: terms({
          matchExpressions: [
            { key: 'pool', operator: 'In', values: ['a100'] },
            { key: 'pool', operator: 'Like', values: ['a'] },
          ],
        }),
      },
    },
    false,
  ],
  [
    {
      what: "Gt reads labels with strconv.ParseInt (base 10): '1e3' is no integer",
      spec: { affinity: terms({ matchExpressions: [{ key: 'mem', operator: 'Gt', values: ['4'] }] }) },
      node: { labels: { ...NODE.labels, mem: '1e3' } },
    },
    false,
  ],
  [
    {
      what: 'Gt on an empty label value: no integer in Kubernetes',
      spec: { affinity: terms({ matchExpressions: [{ key: 'mem', operator: 'Gt', values: ['-1'] }] }) },
      node: { labels: { ...NODE.labels, mem: '' } },
    },
    false,
  ],
  [
    {
      what: 'Gt with two bounds is no requirement',
      spec: {
        affinity: terms({ matchExpressions: [{ key: 'nvidia.com/gpu.count', operator: 'Gt', values: ['4', '5'] }] }),
      },
    },
    false,
  ],
  [
    {
      what: 'pod-level requests (PodLevelResources, on by default since 1.34) replace the containers’ cpu',
      spec: { resources: { requests: { cpu: '6' } } },
    },
    false,
  ],
  [
    {
      what: 'pod-level requests below the containers’ sum',
      spec: {
        containers: main({ ...GPU, requests: { ...GPU.requests, cpu: '6' } }),
        resources: { requests: { cpu: '2' } },
      },
    },
    true,
  ],
];

describe('the simulated scheduler and the autoscaler agree where both follow Kubernetes', () => {
  it.each(agree.map(([c, fits]) => [c.what, c, fits] as const))('%s', (_, c, fits) => {
    expect(verdicts(c)).toEqual({ simulator: fits, product: fits });
  });
});

describe('former findings agree now: the autoscaler follows Kubernetes where it grew pools for pods none could take (issue #28)', () => {
  it.each(formerFindings.map(([c, fits]) => [c.what, c, fits] as const))('%s', (_, c, fits) => {
    expect(verdicts(c)).toEqual({ simulator: fits, product: fits });
  });
});
