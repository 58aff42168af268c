/**
 * The simulated scheduler (infra/local/kube, written from Kubernetes' sources) against the pool
 * autoscaler's own fit rule (functions/autoscale/core/fit.ts `whyNot`, reached through the kube
 * adapter's `toPodInfo` as the autoscaler reaches it): for the same pod and a node of a pool, do
 * they agree it fits? Where they do not, the simulator is the one that follows Kubernetes
 * (issue #28); those cases are listed as findings, each asserting today's disagreement, so a
 * fix on the product side turns its row red and it moves to the agreeing table.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { toPodInfo } from '../../functions/adapters/kube/convert.ts';
import { parseQuantity as productQuantity } from '../../functions/adapters/kube/quantity.ts';
import { whyNot } from '../../functions/autoscale/core/fit.ts';
import { freeOn, unfitReason } from '../../infra/local/kube/scheduler.ts';
import type { Node, Pod } from '../../infra/local/kube/types.ts';

interface Case {
  what: string;
  spec: Record<string, unknown>;
  node?: {
    labels?: Record<string, string>;
    taints?: { key: string; value?: string; effect: string }[];
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

/** Cases where the autoscaler's rule says "fits" and Kubernetes (the simulator) says no: a pool grown for a pod it can never take. */
const findings: Case[] = [
  {
    what: "a sidecar's requests: KEP-753 adds a restartable init container to the sum; the product takes max(init, containers)",
    spec: {
      containers: main({ ...GPU, requests: { ...GPU.requests, cpu: '2' } }),
      initContainers: [
        { name: 'proxy', image: 'x', restartPolicy: 'Always', resources: { requests: { cpu: '2500m' } } },
      ],
    },
  },
  {
    what: 'matchFields: a pod pinned to another node by metadata.name (as the DaemonSet controller pins its pods) fits no new node; the product drops matchFields',
    spec: { affinity: terms({ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['gpu-node-7'] }] }) },
  },
  {
    what: 'an empty node selector term matches no node (NodeSelectorTerm API docs); the product reads it as matching every node',
    spec: { affinity: terms({ matchExpressions: [] }) },
  },
  {
    what: "Gt reads labels with strconv.ParseInt (base 10); the product's Number() reads '1e3' as 1000",
    spec: { affinity: terms({ matchExpressions: [{ key: 'mem', operator: 'Gt', values: ['4'] }] }) },
    node: { labels: { ...NODE.labels, mem: '1e3' } },
  },
  {
    what: "Gt on an empty label value: no integer in Kubernetes; the product's Number('') is 0",
    spec: { affinity: terms({ matchExpressions: [{ key: 'mem', operator: 'Gt', values: ['-1'] }] }) },
    node: { labels: { ...NODE.labels, mem: '' } },
  },
  {
    what: 'pod-level requests (PodLevelResources, on by default since 1.34) replace the containers’ cpu; the product ignores spec.resources',
    spec: { resources: { requests: { cpu: '6' } } },
  },
];

describe('the simulated scheduler and the autoscaler agree where both follow Kubernetes', () => {
  it.each(agree.map(([c, fits]) => [c.what, c, fits] as const))('%s', (_, c, fits) => {
    expect(verdicts(c)).toEqual({ simulator: fits, product: fits });
  });
});

describe('findings: the autoscaler says a pod fits a pool that Kubernetes would never place it on (issue #28)', () => {
  it.each(findings.map((c) => [c.what, c] as const))('%s', (_, c) => {
    expect(verdicts(c)).toEqual({ simulator: false, product: true });
  });
});
