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
  /**
   * Each GPU's MIG devices as last read, by GPU UUID: a lost GPU's pods still hold its instances, and PodResources
   * names them by MIG UUID, long after the sample that lost it.
   */
  private readonly lastMig = new Map<string, GpuIdentity['migDevices']>();

  constructor(
    private readonly source: PodResourcesSource | undefined,
    private readonly log: PublisherLog,
  ) {}

  /**
   * PodResources' holders of this node's GPUs now; undefined when it cannot be read (unknown). `migDevices`
   * absent: the GPU answered nothing this sample (lost), its MIG devices as last read.
   */
  async read(
    sampled: readonly { uuid: string; migDevices?: GpuIdentity['migDevices'] }[],
  ): Promise<DeviceHolder[] | undefined> {
    for (const g of sampled) if (g.migDevices) this.lastMig.set(g.uuid, g.migDevices);
    const gpus = sampled.map((g) => ({ uuid: g.uuid, migDevices: this.lastMig.get(g.uuid) ?? [] }));
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
