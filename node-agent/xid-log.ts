/**
 * The XIDs this agent published, per GPU, for the last `keepMs` (bounded): the actuator's health
 * probe asks which XIDs its GPU raised during the probe window (events/catalog/gpu-action.ts
 * `xidsDuringProbe`). Duplicates the agent absorbed (the same XID seen through NVML and the kernel
 * log) are one occurrence, so they are recorded once, where the agent publishes.
 */
export class XidLog {
  private readonly byGpu = new Map<string, { atMs: number; xid: number }[]>();

  constructor(
    private readonly keepMs = 6 * 3600_000,
    private readonly maxPerGpu = 256,
  ) {}

  record(gpuUuid: string, xid: number, atMs: number): void {
    const list = (this.byGpu.get(gpuUuid) ?? []).filter((x) => atMs - x.atMs <= this.keepMs);
    list.push({ atMs, xid });
    this.byGpu.set(gpuUuid, list.slice(-this.maxPerGpu));
  }

  /** The XIDs `gpuUuid` raised at or after `sinceMs`, oldest first. */
  since(gpuUuid: string, sinceMs: number): number[] {
    return (this.byGpu.get(gpuUuid) ?? []).filter((x) => x.atMs >= sinceMs).map((x) => x.xid);
  }
}
