/**
 * What the local bus remembers is bounded: the last N of something, in order, plus how many there
 * have been in all. A bus left running (or a long `local --follow`) once grew without limit
 * (RSS 180 → 513 MB after 15k events); now memory stops growing at N and the count goes on.
 */

/** The default N: about 40 MB of typical agent events; `historySize` / `--history` change it. */
export const DEFAULT_HISTORY_SIZE = 10_000;

/** The last `capacity` items pushed, oldest first, and the count of all ever pushed. */
export class Ring<T> {
  private items: T[] = [];
  /** Index of the oldest item once the ring is full. */
  private start = 0;
  /** Items pushed since the ring was made. */
  total = 0;

  constructor(readonly capacity: number) {
    if (!Number.isSafeInteger(capacity) || capacity < 0)
      throw new RangeError(`history size must be a whole number >= 0, got ${capacity}`);
  }

  push(item: T): void {
    this.total++;
    if (this.capacity === 0) return;
    if (this.items.length < this.capacity) this.items.push(item);
    else {
      this.items[this.start] = item;
      this.start = (this.start + 1) % this.capacity;
    }
  }

  get length(): number {
    return this.items.length;
  }

  /** Pushed, but no longer kept. */
  get dropped(): number {
    return this.total - this.items.length;
  }

  /** The kept items, oldest first (a copy). */
  toArray(): T[] {
    return this.start === 0 ? [...this.items] : [...this.items.slice(this.start), ...this.items.slice(0, this.start)];
  }
}
