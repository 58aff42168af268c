/**
 * What /dev/kmsg says of a record beside its text. Its prefix (Linux Documentation/ABI/testing/dev-kmsg) is
 * `prio,seq,usec,flags;`: "the 64 bit message sequence number and the monotonic timestamp in microseconds",
 * with more comma-separated fields possibly added before the `;` ("Unknown fields and values should be gracefully
 * ignored"). The sequence numbers count the records of one boot, so boot id + sequence number names one record:
 * read twice (an agent killed before its cursor was saved reads it again, cursor.ts), it is the same record, and
 * its events keep their ids.
 */

/** The follower's word on one record, handed to the agent with its line (follow.ts). */
export interface KernelRecord {
  /** Which record: the boot (`/proc/sys/kernel/random/boot_id`) and its sequence number; absent: boot unknown. */
  key?: { bootId: string; seq: number };
  /**
   * When the kernel logged it (ms since the epoch), for a record logged before the follower started (some while
   * no agent ran); absent for one read as it was logged, whose time is when it was read (the agent's clock, as
   * for an NVML sighting). follow.ts says how far off it can be.
   */
  loggedAtMs?: number;
}

/** A /dev/kmsg record's sequence number and time since boot (µs); undefined for any other line. */
export function kmsgPrefix(line: string): { seq: number; usec: number } | undefined {
  const m = /^\d+,(\d+),(\d+),[^;]*;/.exec(line);
  return m ? { seq: Number(m[1]), usec: Number(m[2]) } : undefined;
}

/**
 * The record's part of an event id: `k<boot id's first 8 hex digits>.<seq>`. 32 bits of a random 128-bit boot id
 * and the record's number: two boots of one node would have to share them and a record number for one GPU's one
 * XID to collide. Short, so the id stays in the catalog's 128 characters (events/common.ts EventId) with the node
 * names an id with a time fits.
 */
export function recordTag(key: { bootId: string; seq: number }): string {
  return `k${key.bootId.replace(/[^A-Za-z0-9]/g, '').slice(0, 8)}.${key.seq}`;
}
