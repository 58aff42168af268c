/**
 * What idle-gpus keeps between invocations, on the node (annotation `gpu-reflex.io/idle-gpus`): one
 * track per held device whose utilization sits under the threshold — since when, the last window seen,
 * whether the owner was told and when the pod is due for eviction. Functions hold no state themselves.
 * In lib/ because rewrite-quotas reads its loans too (functions/quota/idle-lending.ts).
 *
 * A track leaves the record when its run ends (utilization back, the pod gone, a gap): its idle time then
 * goes to `history`, per pod and UTC day, so the cost report still counts a run that ended before the
 * report was read (docs/cost.md, State; functions/idle/core/history.ts).
 */
import * as z from 'zod';

export const IDLE_ANNOTATION = 'gpu-reflex.io/idle-gpus';

const Track = z
  .object({
    /** The device the pod holds: a GPU UUID, or a MIG device UUID. */
    device: z.string().min(1),
    gpu: z.string().min(1),
    mig: z.string().min(1).optional(),
    /** The share of the GPU a MIG device is (3g.40gb: 3/7), for the cost report; absent: a whole GPU. */
    share: z.number().min(0).max(1).optional(),
    namespace: z.string().min(1),
    pod: z.string().min(1),
    /** The pod's metadata.uid: the run is that very pod's (a pod of the same name made since starts its own). */
    uid: z.string().min(1).max(128).optional(),
    /** Epoch ms: the start of the run's first idle window, and the end of its last. */
    since: z.number().int().min(0),
    lastEnd: z.number().int().min(0),
    /** Epoch ms the owner was told (the `idle` event); absent: not yet. */
    notifiedAt: z.number().int().min(0).optional(),
    /** Epoch ms the pod is evicted if still idle; absent: its policy never evicts. */
    evictAt: z.number().int().min(0).optional(),
    /** Epoch ms the eviction was first asked (the `evicted` event); it is asked again while the pod holds on. */
    evictedAt: z.number().int().min(0).optional(),
    /**
     * Lent to the quota planner (policy `lend: true`, once the owner was told): the resource the pod's
     * device is counted under, the pod's UID (the planner lends only while that very pod holds it) and
     * until when this window's evidence holds (its end + the gap): after that, unseen time lends nothing.
     */
    lend: z
      .object({ resource: z.string().min(1).max(253), uid: z.string().min(1).max(128), until: z.number().int().min(0) })
      .strict()
      .optional(),
  })
  .strict();
export type IdleTrack = z.infer<typeof Track>;

/** Closed idle time of one pod on one UTC day: device-milliseconds, the MIG share kept apart as tracks keep it. */
const HistoryEntry = z
  .object({
    namespace: z.string().min(1),
    pod: z.string().min(1),
    uid: z.string().min(1).max(128).optional(),
    share: z.number().min(0).max(1).optional(),
    /** The UTC day, `YYYY-MM-DD`. */
    day: z.string().regex(/^\d{4}-\d{2}-\d{2}$/),
    ms: z.number().int().min(0),
  })
  .strict();
export type IdleHistoryEntry = z.infer<typeof HistoryEntry>;

const RecordSchema = z
  .object({
    v: z.literal(1),
    tracks: z.array(Track).max(256),
    history: z.array(HistoryEntry).max(1024).optional(),
    /** Epoch ms: history before it was dropped to keep the annotation small; idle time before it is unknown. */
    historyFrom: z.number().int().min(0).optional(),
    /**
     * Epoch ms: the latest end of a run moved to `history`. A summary whose window ends at or before it (or before
     * an open run's last window) was seen already: it changes nothing, so its runs are never counted twice.
     */
    closedTo: z.number().int().min(0).optional(),
  })
  .strict();

export interface IdleRecord {
  tracks: IdleTrack[];
  history?: IdleHistoryEntry[];
  historyFrom?: number;
  closedTo?: number;
}

/** The node's record; a record that does not parse starts afresh (idle runs begin again: never evicts early). */
export function readIdleRecord(annotations: Readonly<Record<string, string>>): {
  record: IdleRecord;
  warning?: string;
} {
  const raw = annotations[IDLE_ANNOTATION];
  if (raw === undefined) return { record: { tracks: [] } };
  try {
    const { v: _v, ...record } = RecordSchema.parse(JSON.parse(raw));
    return { record };
  } catch {
    return { record: { tracks: [] }, warning: `${IDLE_ANNOTATION} is not an idle-gpus record: idle runs start again` };
  }
}

/** No track, no history and nothing dropped of it: the annotation is removed rather than kept empty. */
export function encodeIdleRecord(r: IdleRecord): { annotations: Record<string, string | null> } {
  const empty = r.tracks.length === 0 && !r.history?.length && r.historyFrom === undefined;
  return { annotations: { [IDLE_ANNOTATION]: empty ? null : JSON.stringify({ v: 1, ...r }) } };
}
