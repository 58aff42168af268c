/**
 * A flood of application-class XIDs must not be a flood on the bus (GB200 fleets report 168,924 XID 45
 * in two days across a pool). Repeats of one XID on one GPU (or MIG instance) from one pid are one
 * incident: the first is sent at once, the repeats inside the window are held and counted, and when the
 * window closes one event goes out for them with `count` (how many occurrences it stands for). While
 * repeats keep coming the windows chain (one event per window); a window that closes with none held
 * ends the run, and the next occurrence is again sent at once.
 *
 * Only XIDs whose catalog action is `observe` or `restart-workload` are ever held (aggregatable()):
 * anything that can fence, reset, drain or replace goes out when it is seen, and NVLink5 XIDs
 * (144–150) are never held because their sub-code, not their number, decides. Pure: time is injected.
 *
 * Held repeats live in memory until their window closes: an agent killed (SIGKILL, OOM) before then never
 * publishes them. Those read from /dev/kmsg are not lost: `heldFromRecord()` names the first record still held,
 * and the kernel-log cursor stays before it (kmsg/follow.ts), so the next run reads them again and counts them.
 */
import { describeXid } from '../events/xid.ts';
import type { OutgoingEvent } from './events.ts';

/** How long repeats are held by default (XID_AGGREGATE_WINDOW_MS; docs/node-agent.md "XID floods"). */
export const XID_AGGREGATE_WINDOW_MS = 60_000;

const NVLINK5_XIDS = { from: 144, to: 150 };

/** Whether repeats of this XID may be held: its catalog action never goes beyond the workload. */
export function aggregatable(xid: number): boolean {
  if (xid >= NVLINK5_XIDS.from && xid <= NVLINK5_XIDS.to) return false;
  const { action } = describeXid(xid);
  return action === 'observe' || action === 'restart-workload';
}

export interface XidOccurrence {
  gpuUuid: string;
  gpuInstanceId: number | undefined;
  xid: number;
  pid: number | null;
  /** The /dev/kmsg record it was read from (its sequence number, kmsg/record.ts); absent: NVML or no record. */
  record?: number;
}

interface Run {
  /** When the current window closes. */
  until: number;
  held: number;
  /** The latest held occurrence's event: the one that goes out, with its count. */
  last: OutgoingEvent | undefined;
  /** The first /dev/kmsg record among the held occurrences (`heldFromRecord`). */
  firstRecord?: number;
}

export class XidAggregator {
  private readonly runs = new Map<string, Run>();

  constructor(private readonly o: { windowMs: number }) {
    if (!(o.windowMs >= 0)) throw new RangeError('XidAggregator: windowMs must be zero or more');
  }

  /**
   * true: send `event` now (the first of a run, or an XID that is never held); false: it is held and
   * counted, and goes out from `due()` when its window closes. Call `due(now)` first, so a closed
   * window is not extended by a late caller.
   */
  admit(o: XidOccurrence, event: OutgoingEvent, now: number): boolean {
    if (!aggregatable(o.xid)) return true;
    const key = `${o.gpuUuid}/${o.gpuInstanceId ?? '-'}/${o.xid}/${o.pid ?? '-'}`;
    const run = this.runs.get(key);
    if (!run || now >= run.until) {
      this.runs.set(key, { until: now + this.o.windowMs, held: 0, last: undefined });
      return true;
    }
    run.held++;
    run.last = event;
    if (o.record !== undefined) run.firstRecord = Math.min(run.firstRecord ?? o.record, o.record);
    return false;
  }

  /**
   * The first /dev/kmsg record (sequence number) of an occurrence held and not yet sent; undefined: none. The
   * kernel-log cursor must not pass it: what the agent holds is only in its memory until its window closes.
   */
  heldFromRecord(): number | undefined {
    let first: number | undefined;
    for (const r of this.runs.values())
      if (r.held > 0 && r.firstRecord !== undefined) first = Math.min(first ?? r.firstRecord, r.firstRecord);
    return first;
  }

  /** One event per run whose window closed by `now` with occurrences held (`all`: every run, at shutdown). */
  due(now: number, all = false): OutgoingEvent[] {
    const out: OutgoingEvent[] = [];
    for (const [key, run] of this.runs) {
      if (!all && now < run.until) continue;
      if (run.held === 0 || !run.last) {
        this.runs.delete(key);
        continue;
      }
      out.push(withCount(run.last, run.held, this.o.windowMs));
      if (all) this.runs.delete(key);
      // Still flooding: the next window is held too.
      else this.runs.set(key, { until: run.until + this.o.windowMs, held: 0, last: undefined });
    }
    return out;
  }

  /** Occurrences held now (metrics, tests). */
  get held(): number {
    let n = 0;
    for (const r of this.runs.values()) n += r.held;
    return n;
  }
}

/** The held run's one event: how many occurrences it stands for, and the window they were held over. */
function withCount(e: OutgoingEvent, count: number, windowMs: number): OutgoingEvent {
  return { ...e, detail: { ...e.detail, count, countWindowMs: windowMs } };
}
