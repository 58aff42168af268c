/** Test helpers for idle-gpus: utilization summaries window by window, pods, and the planner run over time. */
import type { DeviceHolder, GpuUtilizationSummaryDetail } from '../../events/index.ts';
import { RecordingPublisher } from '../adapters/bus.ts';
import { RecordingNotifier } from '../adapters/chat/notifier.ts';
import { fakeKube } from '../adapters/kube/fake.ts';
import { silentLogger } from '../adapters/logger.ts';
import type { PodFacts } from './core/planner.ts';
import type { IdlePolicy } from './core/policy.ts';
import type { IdleDeps } from './run.ts';

export const GPU0 = 'GPU-00000000-0000-4000-8000-000000000000';
export const GPU1 = 'GPU-00000000-0000-4000-8000-000000000001';
export const MIG0 = 'MIG-00000000-0000-4000-8000-000000000007';
export const T0 = Date.UTC(2026, 11, 5, 0, 0, 0);
export const MIN = 60_000;

export interface GpuReading {
  uuid: string;
  util?: number;
  mem?: number;
  /** MIG devices: uuid, profile and framebuffer use (absent: NVML gave no memory for it). */
  mig?: { uuid: string; profile: string; fb?: number }[];
}

const agg = (v: number) => ({ avg: v, max: v });

/** One summary for the window [start, start + lengthMs). `holders: null`: PodResources unknown. */
export function summary(
  start: number,
  gpus: GpuReading[],
  holders: DeviceHolder[] | null,
  lengthMs = 10 * MIN,
  node = 'gpu-1',
): GpuUtilizationSummaryDetail {
  return {
    schemaVersion: 1,
    eventId: `util:${node}:${start}`,
    node,
    observedAt: new Date(start + lengthMs).toISOString(),
    windowStart: new Date(start).toISOString(),
    windowEnd: new Date(start + lengthMs).toISOString(),
    samples: 10,
    unsampledMs: 0,
    gpus: gpus.map((g, index) => ({
      index,
      uuid: g.uuid,
      ...(g.util !== undefined ? { utilPercent: agg(g.util) } : {}),
      ...(g.mem !== undefined ? { memoryUtilPercent: agg(g.mem) } : {}),
      framebufferUsedPercent: agg(30),
      migDevices: (g.mig ?? []).map((m, i) => ({
        uuid: m.uuid,
        gpuInstanceId: i + 1,
        profile: m.profile,
        ...(m.fb !== undefined ? { framebufferUsedPercent: agg(m.fb) } : {}),
      })),
    })),
    ...(holders ? { holders } : {}),
  };
}

export function holder(namespace: string, name: string, gpu: string, mig?: string): DeviceHolder {
  return { namespace, name, resource: mig ? 'nvidia.com/mig-3g.40gb' : 'nvidia.com/gpu', gpu, ...(mig ? { mig } : {}) };
}

export function pod(namespace: string, name: string, o: Partial<PodFacts> = {}): PodFacts {
  return { namespace, name, labels: {}, annotations: {}, terminating: false, ...o };
}

/** idle-gpus over fake ports on a stepped clock, with one node `gpu-1` and the notebook pod on it. */
export function idleWatcher(policy: IdlePolicy) {
  let now = T0;
  const clock = { now: () => now, sleep: async () => undefined };
  const kube = fakeKube({ clock });
  const publisher = new RecordingPublisher();
  const notifier = new RecordingNotifier();
  const podEvents: string[] = [];
  kube.cluster.addNode({ name: 'gpu-1', labels: { 'node.kubernetes.io/instance-type': 'ecs.gn7i-c8g1.2xlarge' } });
  kube.cluster.addPod({
    namespace: 'research',
    name: 'notebook',
    nodeName: 'gpu-1',
    labels: { team: 'vision' },
    annotations: { 'gpu-reflex.io/owner': '@alice' },
  });
  const deps: IdleDeps = {
    nodes: kube.nodes,
    pods: kube.pods,
    publisher,
    notifier,
    clock,
    logger: silentLogger,
    policy,
    events: { record: async (object, note) => void podEvents.push(`${object.name}: ${note.reason}`) },
  };
  return { kube, publisher, notifier, deps, podEvents, setNow: (ms: number) => void (now = ms) };
}
