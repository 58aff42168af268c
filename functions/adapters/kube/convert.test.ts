import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { toPodInfo } from './convert.ts';

const GiB = 2 ** 30;

describe('toPodInfo: what the scheduler (and the pool autoscaler) sees of a pending pod', () => {
  it('sums the containers’ requests (a limit stands in for a missing request), takes the larger init container, adds the overhead', () => {
    const pod: V1Pod = {
      metadata: { name: 'p', namespace: 'ml' },
      spec: {
        containers: [
          { name: 'a', resources: { requests: { cpu: '1500m', memory: '4Gi' }, limits: { 'nvidia.com/gpu': '1' } } },
          { name: 'b', resources: { requests: { cpu: '500m', memory: '2Gi' } } },
        ],
        initContainers: [{ name: 'warm', resources: { requests: { cpu: '4', memory: '1Gi' } } }],
        overhead: { cpu: '250m' },
      },
    };
    expect(toPodInfo(pod).requests).toEqual({ cpu: 4.25, memory: 6 * GiB, 'nvidia.com/gpu': 1 });
  });

  it('counts a GPU a sidecar or an init container holds: the pod holds it as Kubernetes reckons its requests', () => {
    // A native sidecar (KEP-753: an init container with restartPolicy Always) holds its GPU for the pod's life; a
    // plain init container's GPU is the pod's while it runs, and the pod needs at least that many
    // (component-helpers/resource/helpers.go PodRequests). Counting the app containers alone read such a pod as
    // GPU-free: scale-in could give its node back, idle and quota could miss it.
    const gpu = (n: string) => ({ resources: { limits: { 'nvidia.com/gpu': n } } });
    const sidecar: V1Pod = {
      metadata: { name: 'p', namespace: 'ml' },
      spec: {
        containers: [{ name: 'app' }],
        initContainers: [{ name: 'encoder', restartPolicy: 'Always', ...gpu('1') }],
      },
    };
    expect(toPodInfo(sidecar).extendedResources).toEqual({ 'nvidia.com/gpu': 1 });
    const init: V1Pod = {
      metadata: { name: 'q', namespace: 'ml' },
      spec: { containers: [{ name: 'app', ...gpu('1') }], initContainers: [{ name: 'warm', ...gpu('2') }] },
    };
    expect(toPodInfo(init).extendedResources).toEqual({ 'nvidia.com/gpu': 2 });
  });

  it('keeps tolerations and required node affinity, and leaves them out when there are none', () => {
    const pod: V1Pod = {
      metadata: { name: 'p', namespace: 'ml' },
      spec: {
        containers: [{ name: 'a' }],
        tolerations: [{ key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' }],
        affinity: {
          nodeAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: {
              nodeSelectorTerms: [
                { matchExpressions: [{ key: 'accelerator', operator: 'In', values: ['nvidia-tesla-t4'] }] },
              ],
            },
          },
        },
      },
    };
    const info = toPodInfo(pod);
    expect(info.tolerations).toEqual([{ key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' }]);
    expect(info.requiredNodeTerms).toEqual([
      { matchExpressions: [{ key: 'accelerator', operator: 'In', values: ['nvidia-tesla-t4'] }] },
    ]);
    const bare = toPodInfo({ metadata: { name: 'q' }, spec: { containers: [{ name: 'a' }] } });
    expect(bare).not.toHaveProperty('tolerations');
    expect(bare).not.toHaveProperty('requiredNodeTerms');
    expect(bare).not.toHaveProperty('requests');
  });
});

describe('toPodInfo: when a pod that ended stopped', () => {
  const ended = (phase: string, finished: (string | undefined)[]): V1Pod => ({
    metadata: { name: 'job', namespace: 'ml' },
    status: {
      phase,
      containerStatuses: finished.map((f, i) => ({
        name: `c${i}`,
        image: 'x',
        imageID: '',
        ready: false,
        restartCount: 0,
        state: f ? { terminated: { exitCode: 0, finishedAt: new Date(f) } } : { running: {} },
      })),
    },
  });
  it('takes the latest container end of a Succeeded or Failed pod, nothing while one still runs', () => {
    expect(toPodInfo(ended('Succeeded', ['2026-12-01T01:00:00Z', '2026-12-01T02:00:00Z'])).finishedAt).toBe(
      '2026-12-01T02:00:00.000Z',
    );
    expect(toPodInfo(ended('Failed', ['2026-12-01T01:00:00Z', undefined])).finishedAt).toBeUndefined();
    expect(toPodInfo(ended('Running', ['2026-12-01T01:00:00Z'])).finishedAt).toBeUndefined();
    expect(toPodInfo(ended('Succeeded', [])).finishedAt).toBeUndefined();
  });
});

describe('toPodInfo: a DRA pod', () => {
  it('counts the ResourceClaims it names, which no extended resource shows', () => {
    const pod = {
      metadata: { name: 'dra-serve-0', namespace: 'ml' },
      spec: {
        containers: [{ name: 'c', resources: { claims: [{ name: 'gpu' }] } }],
        resourceClaims: [{ name: 'gpu', resourceClaimTemplateName: 'one-gpu' }],
      },
    } as unknown as Parameters<typeof toPodInfo>[0];
    expect(toPodInfo(pod)).toMatchObject({ resourceClaims: 1, extendedResources: {} });
    expect(toPodInfo({ metadata: { name: 'p' }, spec: { containers: [] } }).resourceClaims).toBeUndefined();
  });
});
