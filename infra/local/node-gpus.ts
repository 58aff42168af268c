/**
 * A simulated GPU node (see gpu-specs.ts): what it physically has (gpu-specs.ts), which GPU each of its pods
 * holds (gpu-allocation.ts), and the MIG layouts and instances in use across nodes (mig-usage.ts).
 */
export { gpuSpecsOf, isGpuNode, type GpuSpec, type MigSlot } from './gpu-specs.ts';
export { allocateGpus, cgroupLine, type ClaimGpus, type GpuProcessOfPod, type SharedGpus } from './gpu-allocation.ts';
export { migInstancesInUse, migLayoutsOf } from './mig-usage.ts';
