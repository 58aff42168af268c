import type { Node, Pod } from './kube/index.ts';
import { allocateGpus } from './gpu-allocation.ts';
import { gpuSpecsOf, isGpuNode } from './gpu-specs.ts';

/** Node → each simulated GPU's MIG instances (profiles), as its NVML lists them: the layouts the world has. */
export function migLayoutsOf(nodes: readonly Node[]): Map<string, string[][]> {
  const out = new Map<string, string[][]>();
  for (const n of nodes.filter(isGpuNode)) {
    const specs = gpuSpecsOf(n);
    if (specs.some((g) => g.mig.length > 0))
      out.set(
        n.metadata.name,
        specs.map((g) => g.mig.map((s) => s.profile)),
      );
  }
  return out;
}

/**
 * Which MIG instances the running pods of each MIG node hold, per GPU (profile names): what the
 * node agent's inventory would report from NVML after the device plugin allocated them.
 */
export function migInstancesInUse(nodes: readonly Node[], pods: readonly Pod[]): Map<string, string[][]> {
  const usage = new Map<string, string[][]>();
  for (const n of nodes.filter(isGpuNode)) {
    const specs = gpuSpecsOf(n);
    if (!specs.some((g) => g.mig.length > 0)) continue;
    const on = pods.filter(
      (p) => p.spec.nodeName === n.metadata.name && p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed',
    );
    const perGpu = specs.map(() => [] as string[]);
    for (const proc of allocateGpus(specs, on)) {
      if (proc.gpuInstanceId === undefined) continue;
      const slot = specs[proc.gpu]?.mig.find((s) => s.giId === proc.gpuInstanceId);
      if (slot) perGpu[proc.gpu]!.push(slot.profile);
    }
    usage.set(n.metadata.name, perGpu);
  }
  return usage;
}
