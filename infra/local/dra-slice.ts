import type { GpuSpec } from './node-gpus.ts';

/**
 * What NVIDIA's DRA driver for GPUs publishes for one node: one ResourceSlice (driver
 * `gpu.nvidia.com`, pool = the node) listing each whole GPU as `gpu-<index>` with its `type: gpu`,
 * `uuid`, `index` and `productName` attributes, and the DeviceClass its Helm chart installs, selecting
 * `device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'`
 * (NVIDIA/k8s-dra-driver-gpu deployments/helm/nvidia-dra-driver-gpu/templates/deviceclass-gpu.yaml;
 * fencing.md §1). A DRA node advertises no `nvidia.com/gpu`: its GPUs are these devices.
 */
export function gpuResourceSlice(node: string, driver: string, gpus: readonly GpuSpec[], nowIso: string) {
  return {
    apiVersion: 'resource.k8s.io/v1',
    kind: 'ResourceSlice',
    metadata: { name: `${node}-${driver}`, uid: `slice-${node}`, resourceVersion: '', creationTimestamp: nowIso },
    spec: {
      driver,
      nodeName: node,
      pool: { name: node, generation: 1, resourceSliceCount: 1 },
      devices: gpus
        .filter((g) => g.mig.length === 0)
        .map((g) => ({
          name: `gpu-${g.index}`,
          attributes: {
            type: { string: 'gpu' },
            uuid: { string: g.uuid },
            index: { int: g.index },
            productName: { string: g.name },
          },
        })),
    },
  };
}

/** The DeviceClass NVIDIA's chart installs for whole GPUs (named after the driver). */
export function gpuDeviceClass(driver: string) {
  return {
    apiVersion: 'resource.k8s.io/v1',
    kind: 'DeviceClass',
    metadata: { name: driver },
    spec: {
      selectors: [
        { cel: { expression: `device.driver == '${driver}' && device.attributes['${driver}'].type == 'gpu'` } },
      ],
    },
  };
}
