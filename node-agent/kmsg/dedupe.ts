/**
 * The same XID reaches the agent twice: from NVML's event set and from the kernel log. The
 * deduper pairs them: a sighting from one source absorbs one unmatched sighting of the same XID on
 * the same GPU from the other source within `windowMs`. Repeats from one source are new
 * occurrences (they count toward escalation) and are always admitted. Pure: time is injected.
 */

export type XidSource = 'nvml' | 'kmsg';

interface Pending {
  nvml: number[];
  kmsg: number[];
}

export class XidDeduper {
  private readonly seen = new Map<string, Pending>();
  private readonly windowMs: number;
  private readonly now: () => number;

  constructor(options: { windowMs: number; now: () => number }) {
    if (!(options.windowMs >= 0)) throw new RangeError('XidDeduper: windowMs must be zero or more');
    this.windowMs = options.windowMs;
    this.now = options.now;
  }

  /**
   * true: report it (first sighting); false: the other source already reported this one.
   * `pciBusId` must be NVML's form (normalizePciBusId); case is ignored.
   */
  admit(pciBusId: string, xid: number, source: XidSource): boolean {
    const now = this.now();
    const key = `${pciBusId.toUpperCase()}/${xid}`;
    const pending = this.seen.get(key) ?? { nvml: [], kmsg: [] };
    const fresh = (t: number) => now - t <= this.windowMs;
    pending.nvml = pending.nvml.filter(fresh);
    pending.kmsg = pending.kmsg.filter(fresh);
    const other = source === 'nvml' ? pending.kmsg : pending.nvml;
    const admitted = other.length === 0;
    if (admitted) pending[source].push(now);
    else other.shift();
    if (pending.nvml.length + pending.kmsg.length === 0) this.seen.delete(key);
    else this.seen.set(key, pending);
    if (this.seen.size > 4096) this.prune(now);
    return admitted;
  }

  /** Keys with unmatched sightings still inside the window (for tests and metrics). */
  get size(): number {
    return this.seen.size;
  }

  private prune(now: number): void {
    for (const [key, p] of this.seen) {
      if (p.nvml.concat(p.kmsg).every((t) => now - t > this.windowMs)) this.seen.delete(key);
    }
  }
}
