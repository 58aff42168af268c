/**
 * Who holds which GPU by the kubelet's PodResources API (collectors/pod-resources-source.ts), as the agent
 * reads it at each sample: unreadable or not usable is unknown (undefined), never "nobody", and why is
 * logged once per change.
 */
import type { DeviceHolder } from '../events/common.ts';
import { deviceHolders, type GpuIdentity, type PodResourcesSource } from './collectors/pod-resources-source.ts';
import type { PublisherLog } from './publisher/types.ts';

export class HolderReader {
  /** Why PodResources was last unreadable (logged once per change). */
  private problem: string | undefined;

  constructor(
    private readonly source: PodResourcesSource | undefined,
    private readonly log: PublisherLog,
  ) {}

  /** PodResources' holders of this node's GPUs now; undefined when it cannot be read (unknown). */
  async read(gpus: readonly GpuIdentity[]): Promise<DeviceHolder[] | undefined> {
    if (!this.source) return undefined;
    const r = await this.source.read();
    if (!r.known) {
      if (r.reason !== this.problem)
        this.log.warn('PodResources not readable: which pods hold a GPU is unknown', { reason: r.reason });
      this.problem = r.reason;
      return undefined;
    }
    const { holders, unmatched } = deviceHolders(r.pods, gpus);
    // A GPU device the agent cannot name by UUID: who holds which GPU is unknown, not "nobody".
    const problem =
      unmatched.length > 0 ? `GPU devices that name no GPU here: ${unmatched.slice(0, 4).join(', ')}` : undefined;
    if (problem !== this.problem) {
      if (problem) this.log.warn('PodResources not usable: which pods hold a GPU is unknown', { reason: problem });
      else this.log.info('PodResources readable again');
    }
    this.problem = problem;
    return problem ? undefined : holders.slice(0, 256);
  }
}
