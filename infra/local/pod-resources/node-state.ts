/**
 * What one simulated node's kubelet answers on PodResources v1, from what the simulated device plugin
 * and DRA driver allocated (node-gpus.ts allocateGpus, kept by NodeProcesses) — never from what the
 * node agent reports:
 *
 * - `List`: every pod bound to the node (the kubelet lists its active pods, devices or not), each
 *   container with its device-plugin devices by resource — a whole GPU as `nvidia.com/gpu` with the
 *   GPU UUID as device ID, a MIG device as `nvidia.com/mig-<profile>` with the MIG UUID, as NVIDIA's
 *   k8s-device-plugin names them (internal/rm/devices.go: the device ID is the UUID) — and its DRA
 *   claims as `dynamic_resources` (driver, pool = the node, device `gpu-<index>`, the names the
 *   simulated ResourceSlice publishes, device-plugin.ts). The simulator has no Kubernetes version knob:
 *   DynamicResources (alpha 1.27, beta and on in 1.34, kubernetes/website feature-gate docs) is served.
 *   The claim is named as the pod's `status.resourceClaimStatuses` records it (a template's claim, made by
 *   the simulated resourceclaim controller with generateName `<pod>-<entry>-`: kube/dra-controller.ts) or
 *   by its own `resourceClaimName`; its devices are those the scheduler allocated to it.
 * - `GetAllocatableResources`: the devices the plugin advertises healthy now: the kubelet's
 *   devicemanager GetAllocatableDevices filters every known device by the healthy set
 *   (kubernetes pkg/kubelet/cm/devicemanager/manager.go), so a GPU the plugin holds out — a fence —
 *   leaves it by its UUID; a partial MIG latch takes out one MIG device (the first of its profile).
 * - Every device sits on NUMA node 0: the simulator has no topology.
 */
import { claimNameOf } from '../kube/dra-allocator.ts';
import type { Pod } from '../kube/types.ts';
import { migDevicesJson } from '../node-files.ts';
import type { GpuProcessOfPod, GpuSpec } from '../node-gpus.ts';
import type { PodResourcesState } from './server.ts';
import type { ContainerDevicesMsg, ContainerResourcesMsg, PodResourcesMsg } from './wire.ts';

export interface NodeStateSources {
  node: string;
  /** The node's GPUs now (mig-manager may relay them). */
  gpus: () => readonly GpuSpec[];
  /** What the device plugin and DRA driver allocated, per process (NodeProcesses.current). */
  allocation: () => readonly GpuProcessOfPod[];
  /** The pods bound to the node now. */
  pods: () => readonly Pod[];
  /** What the plugin does not advertise (DevicePluginStandIn.notAdvertised); none: everything healthy. */
  notAdvertised?: () => { held: { gpu: number; devices: ReadonlyMap<string, number> }[]; gone: Set<number> };
  /** The DRA driver's name (the simulated ResourceSlice's). */
  draDriver: string;
  /**
   * NVIDIA's plugin config shares the node's whole GPUs: each gives `replicas` devices of `resource`,
   * named `<UUID>::<n>` (NVIDIA/k8s-device-plugin internal/rm/device_map.go, replicated devices).
   */
  sharing?: () => { resource: string; replicas: number } | undefined;
}

const NUMA = [0];

function migUuid(g: GpuSpec, giId: number): string | undefined {
  return (migDevicesJson(g) as { giId: number; uuid: string }[]).find((m) => m.giId === giId)?.uuid;
}

/**
 * A GPU's device-plugin devices: one whole GPU (or its replicas `<UUID>::<n>` under a shared
 * resource), or each MIG instance under its profile's resource.
 */
function devicesOf(g: GpuSpec, sharing?: { resource: string; replicas: number }): { resource: string; id: string }[] {
  if (g.mig.length === 0 && sharing && sharing.replicas > 1)
    return Array.from({ length: sharing.replicas }, (_, n) => ({ resource: sharing.resource, id: `${g.uuid}::${n}` }));
  if (g.mig.length === 0) return [{ resource: 'nvidia.com/gpu', id: g.uuid }];
  return g.mig.map((s) => ({ resource: `nvidia.com/mig-${s.profile}`, id: migUuid(g, s.giId)! }));
}

function grouped(devices: readonly { resource: string; id: string }[]): ContainerDevicesMsg[] {
  const by = new Map<string, string[]>();
  for (const d of devices) by.set(d.resource, [...(by.get(d.resource) ?? []), d.id]);
  return [...by].map(([resourceName, deviceIds]) => ({ resourceName, deviceIds, numaNodes: NUMA }));
}

export function podResourcesState(s: NodeStateSources): PodResourcesState {
  return {
    pods(): PodResourcesMsg[] {
      const gpus = s.gpus();
      const alloc = s.allocation();
      return s
        .pods()
        .filter((p) => p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed')
        .map((p) => {
          const mine = alloc.filter((a) => a.pod.uid === p.metadata.uid);
          const devices: { resource: string; id: string }[] = [];
          // A claim by its object's name: a shared one's own (`resourceClaimName`), a template's the one the
          // resourceclaim controller made and recorded in the pod's status (`<pod>-<entry>-<suffix>`).
          const claims = new Map<string, number[]>();
          for (const a of mine) {
            const g = gpus[a.gpu];
            if (!g) continue;
            const claimName = a.sharedClaim ?? claimNameOf(p, a.claim ?? '') ?? `${p.metadata.name}-${a.claim}`;
            if (a.claim !== undefined) claims.set(claimName, [...(claims.get(claimName) ?? []), g.index]);
            else if (a.gpuInstanceId === undefined) devices.push({ resource: 'nvidia.com/gpu', id: g.uuid });
            else {
              const slot = g.mig.find((m) => m.giId === a.gpuInstanceId);
              const id = migUuid(g, a.gpuInstanceId);
              if (slot && id) devices.push({ resource: `nvidia.com/mig-${slot.profile}`, id });
            }
          }
          // The simulated pods run one container: it holds everything the pod was given.
          const containers: ContainerResourcesMsg[] = (p.spec.containers ?? []).map((c, i) => ({
            name: c.name,
            devices: i === 0 ? grouped(devices) : [],
            dynamicResources:
              i === 0
                ? [...claims].map(([claimName, indices]) => ({
                    claimName,
                    claimNamespace: p.metadata.namespace ?? 'default',
                    claimResources: indices.map((index) => ({
                      // A CDI name in the CDI spec's vendor/class=name form (api.proto's CDIDevice comment).
                      cdiDevices: [`k8s.${s.draDriver}/gpu=gpu-${index}`],
                      driverName: s.draDriver,
                      poolName: s.node,
                      deviceName: `gpu-${index}`,
                    })),
                  }))
                : [],
          }));
          return { name: p.metadata.name, namespace: p.metadata.namespace ?? 'default', containers };
        });
    },

    allocatable(): ContainerDevicesMsg[] {
      const { held, gone } = s.notAdvertised?.() ?? { held: [], gone: new Set<number>() };
      const out: { resource: string; id: string }[] = [];
      const sharing = s.sharing?.();
      for (const g of s.gpus()) {
        if (gone.has(g.index)) continue;
        const h = held.find((x) => x.gpu === g.index);
        const left = new Map(h?.devices ?? []);
        for (const d of devicesOf(g, sharing)) {
          const n = left.get(d.resource) ?? 0;
          if (n > 0) {
            left.set(d.resource, n - 1);
            continue;
          }
          out.push(d);
        }
      }
      return grouped(out);
    },
  };
}
