import { describe, expect, it } from 'vitest';
import { schedulerRequests } from './pod-requests.ts';
import type { Container, Pod } from './types.ts';

const c = (name: string, requests: Record<string, string>, extra: Partial<Container> = {}): Container => ({
  name,
  resources: { requests },
  ...extra,
});
const pod = (spec: Partial<Pod['spec']>): Pod =>
  ({ metadata: { name: 'p' }, spec: { containers: [], ...spec } }) as Pod;
const of = (p: Pod) => Object.fromEntries(schedulerRequests(p));

/** Cases after k8s.io/component-helpers/resource/helpers_test.go (TestPodRequests) and KEP-753's example. */
describe('a simulated pod requests what PodRequests says', () => {
  it('sums its containers, cpu in millicores, memory in bytes', () => {
    expect(
      of(pod({ containers: [c('a', { cpu: '500m', memory: '1Gi' }), c('b', { cpu: '0.25', 'nvidia.com/gpu': '1' })] })),
    ).toEqual({ cpu: 750, memory: 2 ** 30, 'nvidia.com/gpu': 1 });
  });

  it('needs at least its largest plain init container, per resource', () => {
    expect(
      of(
        pod({
          containers: [c('a', { cpu: '1', memory: '1Gi' })],
          initContainers: [c('i', { cpu: '2', memory: '512Mi' })],
        }),
      ),
    ).toEqual({ cpu: 2000, memory: 2 ** 30 });
  });

  it('adds a sidecar to the sum, and to each later init container', () => {
    // KEP-753: sidecar s (1 cpu) then init i (2 cpu): i runs beside s, so 3; then app a (1) + s (1) = 2.
    const sidecar = c('s', { cpu: '1' }, { restartPolicy: 'Always' });
    expect(of(pod({ containers: [c('a', { cpu: '1' })], initContainers: [sidecar, c('i', { cpu: '2' })] }))).toEqual({
      cpu: 3000,
    });
    expect(of(pod({ containers: [c('a', { cpu: '3' })], initContainers: [c('i', { cpu: '2' }), sidecar] }))).toEqual({
      cpu: 4000,
    });
  });

  it('adds the runtime class overhead', () => {
    expect(of(pod({ containers: [c('a', { cpu: '1' })], overhead: { cpu: '250m', memory: '120Mi' } }))).toEqual({
      cpu: 1250,
      memory: 120 * 2 ** 20,
    });
  });

  it('takes pod-level cpu and memory requests over the containers', () => {
    expect(
      of(pod({ containers: [c('a', { cpu: '1', 'nvidia.com/gpu': '1' })], resources: { requests: { cpu: '3' } } })),
    ).toEqual({ cpu: 3000, 'nvidia.com/gpu': 1 });
  });

  it('requests the limit where a container gives no request (API defaulting)', () => {
    expect(
      of(
        pod({
          containers: [
            { name: 'a', resources: { limits: { 'nvidia.com/gpu': '2', cpu: '1' }, requests: { cpu: '100m' } } },
          ],
        }),
      ),
    ).toEqual({ 'nvidia.com/gpu': 2, cpu: 100 });
  });

  it('rounds up to whole millicores and bytes (MilliValue, Value)', () => {
    expect(of(pod({ containers: [c('a', { cpu: '0.0001', memory: '1.5' }), c('b', { cpu: '0.1' })] }))).toEqual({
      cpu: 101,
      memory: 2,
    });
  });
});
