import type { Pod } from './types.ts';

/**
 * A pod that starts but is not Ready yet: its containers run, its readiness probe has not passed.
 * Annotated with this many seconds, a pod the kubelet starts reports `Ready=False` (reason
 * `ContainersNotReady`, as the kubelet's status manager writes it) until that long after it
 * started, then `Ready=True`. A ReplicaSet's replacement copies its pod's annotations, so a
 * workload scripted this way gets replacements that are not Ready at once, and a
 * PodDisruptionBudget counts them as unhealthy meanwhile (the disruption controller counts only
 * Ready pods: pkg/controller/disruption countHealthyPods / IsPodReady).
 */
export const READY_AFTER = 'sim.gpu-reflex.io/ready-after-seconds';

/**
 * A pod annotated so (`"true"`) holds its devices but runs no GPU process yet (a server that has not
 * opened a CUDA context): NVML lists no process for it, while the kubelet's PodResources lists its
 * allocation (node-gpus.ts).
 */
export const NO_GPU_PROCESS = 'sim.gpu-reflex.io/no-gpu-process';

/** How long after starting the pod turns Ready, in ms; 0 for a pod Ready at once. */
export function readyDelayMs(pod: Pod): number {
  const v = pod.metadata.annotations?.[READY_AFTER];
  const seconds = v === undefined || v === '' ? 0 : Number(v);
  return Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : 0;
}

/** A running pod's status before its readiness probe passes (what runningStatus wrote, made not Ready). */
export function notReady(status: NonNullable<Pod['status']>, nowIso: string): NonNullable<Pod['status']> {
  return withReady(status, false, nowIso);
}

/** The same pod once its probe passes. */
export function nowReady(status: NonNullable<Pod['status']>, nowIso: string): NonNullable<Pod['status']> {
  return withReady(status, true, nowIso);
}

function withReady(status: NonNullable<Pod['status']>, ready: boolean, nowIso: string): NonNullable<Pod['status']> {
  const flips = new Set(['Ready', 'ContainersReady']);
  return {
    ...status,
    conditions: status.conditions?.map((c) =>
      flips.has(c.type)
        ? {
            type: c.type,
            status: ready ? 'True' : 'False',
            lastProbeTime: null,
            lastTransitionTime: nowIso,
            ...(ready
              ? {}
              : {
                  reason: 'ContainersNotReady',
                  message: 'containers with unready status: [' + containerNames(status) + ']',
                }),
          }
        : c,
    ),
    containerStatuses: (status.containerStatuses as { ready?: boolean }[] | undefined)?.map((s) => ({ ...s, ready })),
  } as NonNullable<Pod['status']>;
}

function containerNames(status: NonNullable<Pod['status']>): string {
  return ((status.containerStatuses as { name: string }[] | undefined) ?? []).map((s) => s.name).join(' ');
}
