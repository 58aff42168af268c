/**
 * GPUs whose MIG mode NVML failed to read at the last sample (a reading's `unreadable`). The inventory can only
 * say `unsupported` for them, which reads as "no MIG": while any is listed the agent publishes no inventory and
 * its latest inventory is unknown (agent.ts), so neither the labels nor the device plugin check judge the node on
 * it. Said once when it turns unknown, and once when it is known again.
 */
import type { PublisherLog } from '../publisher/types.ts';
import type { GpuReading } from './reading.ts';

export class MigModeWatch {
  private unknown: string[] = [];

  constructor(private readonly log: PublisherLog) {}

  /** Every GPU's MIG mode was read at the last sample. */
  get known(): boolean {
    return this.unknown.length === 0;
  }

  /** Takes a sample's live readings. */
  update(live: readonly GpuReading[]): void {
    const unknown = live.filter((r) => r.unreadable?.includes('migMode')).map((r) => String(r.index));
    if (unknown.length > 0 && this.unknown.length === 0)
      this.log.warn('MIG mode unreadable: inventory held back until NVML answers it', { gpus: unknown.join(',') });
    else if (unknown.length === 0 && this.unknown.length > 0)
      this.log.info('MIG mode readable again: inventory sent', { gpus: this.unknown.join(',') });
    this.unknown = unknown;
  }
}
