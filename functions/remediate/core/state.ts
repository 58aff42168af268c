/**
 * The remediation state, kept ON the Kubernetes node (functions hold nothing between invocations):
 *
 * - label      `gpu-reflex.io/state` = healthy | quarantined | draining | awaiting-repair | awaiting-approval
 * - taint      `<taintKey>=<reason>:NoSchedule` (reason like `xid-79`), only while the node is out
 * - annotation `gpu-reflex.io/quarantined-gpus` = JSON list of quarantined GPU UUIDs / MIG instances
 * - annotation `gpu-reflex.io/history` = compact JSON: incidents, recent occurrences, handled ids
 * - annotation `gpu-reflex.io/repaired-at` = ISO time, written by the repair adapter or a person
 *   after a reboot/replacement; it is the way out of `awaiting-repair`.
 *
 * parseNodeState never throws: garbage becomes an empty state plus a warning. Pure.
 */
import * as z from 'zod';
import { Timestamp } from '../../../events/index.ts';
import { DEFAULT_TAINT_KEY, QUARANTINED_GPUS_ANNOTATION, STATE_LABEL } from '../../lib/node-state.ts';
import type { NodeInfo, Taint } from '../../adapters/kube/model.ts';
import {
  HistorySchema,
  LIMITS,
  NODE_PHASES,
  type Incident,
  type NodePhase,
  type Occurrence,
} from './incident-schema.ts';

// The key is the kernel's: quota reads it too (capacity a fence takes out), and neither imports the other.
export { QUARANTINED_GPUS_ANNOTATION };

/** The one Taint type: the Kubernetes ports' (adapters/kube/model.ts). */
export type { Taint };
export { DEFAULT_TAINT_KEY, STATE_LABEL };
export * from './incident-schema.ts';

export const HISTORY_ANNOTATION = 'gpu-reflex.io/history';
export const REPAIRED_AT_ANNOTATION = 'gpu-reflex.io/repaired-at';

export interface NodeState {
  phase: NodePhase;
  /** Open incidents and recently closed ones (closedAt keeps stale replays from reopening them). */
  incidents: Incident[];
  /** Occurrences within escalation windows, newest last. */
  recent: Occurrence[];
  /** Event ids already handled (dedupe), oldest first, bounded. */
  handled: string[];
  quarantinedGpus: string[];
  /** Our taint's reason (`xid-79`) while the node carries it. */
  taint?: string;
  /** We cordoned the node: restore uncordons only what we cordoned, never an admin's cordon. */
  cordoned: boolean;
  restoredAt?: string;
  repairedAt?: string;
  /** Problems met while parsing; never encoded. */
  warnings: string[];
}

export function emptyState(): NodeState {
  return {
    phase: 'healthy',
    incidents: [],
    recent: [],
    handled: [],
    quarantinedGpus: [],
    cordoned: false,
    warnings: [],
  };
}

/** Reads the state from a node's metadata. Never throws; every problem becomes a warning. */
export function parseNodeState(
  annotations: Readonly<Record<string, string>> | undefined,
  labels: Readonly<Record<string, string>> | undefined,
  taints: readonly Taint[] | undefined,
  opts: { taintKey?: string; unschedulable?: boolean } = {},
): NodeState {
  const s = emptyState();
  const a = isRecord(annotations) ? annotations : {};
  const l = isRecord(labels) ? labels : {};
  const raw = a[HISTORY_ANNOTATION];
  if (typeof raw === 'string') {
    const h = HistorySchema.safeParse(safeJson(raw));
    if (h.success) {
      s.incidents = h.data.incidents;
      s.recent = h.data.recent;
      s.handled = h.data.handled;
      s.cordoned = h.data.cordoned;
      if (h.data.restoredAt) s.restoredAt = h.data.restoredAt;
    } else s.warnings.push(`${HISTORY_ANNOTATION} is corrupt: starting from an empty history`);
  }
  const q = a[QUARANTINED_GPUS_ANNOTATION];
  if (typeof q === 'string') {
    const parsed = z.array(z.string().min(1).max(200)).max(64).safeParse(safeJson(q));
    if (parsed.success) s.quarantinedGpus = parsed.data;
    else s.warnings.push(`${QUARANTINED_GPUS_ANNOTATION} is corrupt: ignoring it`);
  }
  const r = a[REPAIRED_AT_ANNOTATION];
  if (typeof r === 'string') {
    if (Timestamp.safeParse(r).success) s.repairedAt = r;
    else s.warnings.push(`${REPAIRED_AT_ANNOTATION} is not an ISO UTC time: ignoring it`);
  }
  const label = l[STATE_LABEL];
  if (label !== undefined) {
    if ((NODE_PHASES as readonly string[]).includes(label)) s.phase = label as NodePhase;
    else s.warnings.push(`${STATE_LABEL}=${String(label).slice(0, 63)} is not a known state: treating it as healthy`);
  }
  const key = opts.taintKey ?? DEFAULT_TAINT_KEY;
  const ours = Array.isArray(taints) ? taints.find((t) => isRecord(t) && t.key === key) : undefined;
  if (ours) {
    s.taint = typeof ours.value === 'string' && ours.value ? ours.value : 'unknown';
    // History lost but our taint is there: the cordon beside it is ours too.
    if (typeof raw !== 'string' || s.warnings.length > 0) s.cordoned = s.cordoned || opts.unschedulable === true;
  }
  return s;
}

/** The state a node carries (its history and quarantine annotations, state label, our taint, its cordon). */
export function stateOf(
  n: Pick<NodeInfo, 'annotations' | 'labels' | 'taints' | 'unschedulable'>,
  taintKey?: string,
): NodeState {
  return parseNodeState(n.annotations, n.labels, n.taints, {
    unschedulable: n.unschedulable,
    ...(taintKey ? { taintKey } : {}),
  });
}

/** Our part of the node's metadata. `null` = remove that key. The cordon is `unschedulable`. */
export interface EncodedNodeState {
  labels: Record<string, string>;
  annotations: Record<string, string | null>;
  taint: Taint | null;
  /** `true` cordon, `false` uncordon, `undefined` leave alone (an admin's cordon is not ours). */
  unschedulable?: boolean;
}

export function encodeNodeState(state: NodeState, opts: { taintKey?: string } = {}): EncodedNodeState {
  const history = encodeHistory(state);
  return {
    labels: { [STATE_LABEL]: state.phase },
    annotations: {
      [HISTORY_ANNOTATION]: history,
      [QUARANTINED_GPUS_ANNOTATION]: state.quarantinedGpus.length > 0 ? JSON.stringify(state.quarantinedGpus) : null,
    },
    taint: state.taint ? { key: opts.taintKey ?? DEFAULT_TAINT_KEY, value: state.taint, effect: 'NoSchedule' } : null,
    ...(state.cordoned ? { unschedulable: true } : {}),
  };
}

/** Compact JSON, trimmed (oldest first) until it fits LIMITS.historyBytes. */
export function encodeHistory(state: NodeState): string {
  const h = capState(state);
  let text = JSON.stringify(h);
  // Trim order: handled ids, then occurrences, then closed incidents, then pod lists.
  while (Buffer.byteLength(text) > LIMITS.historyBytes) {
    if (h.handled.length > 0) h.handled.splice(0, Math.max(1, h.handled.length >> 2));
    else if (h.recent.length > 0) h.recent.splice(0, Math.max(1, h.recent.length >> 2));
    else if (h.incidents.some((i) => i.phase === 'closed'))
      h.incidents.splice(
        h.incidents.findIndex((i) => i.phase === 'closed'),
        1,
      );
    else if (h.incidents.some((i) => i.pods.length > 0 || i.workloads.length > 1))
      h.incidents.forEach((i) => ((i.pods = []), (i.workloads = i.workloads.slice(-1))));
    else h.incidents.shift();
    text = JSON.stringify(h);
  }
  return text;
}

function capState(s: NodeState): z.infer<typeof HistorySchema> {
  const open = s.incidents.filter((i) => i.phase !== 'closed');
  const closed = s.incidents
    .filter((i) => i.phase === 'closed')
    .sort((a, b) => cmp(a.closedAt ?? a.lastAt, b.closedAt ?? b.lastAt));
  const incidents = [
    ...closed.slice(Math.max(0, closed.length - Math.max(0, LIMITS.incidents - open.length))),
    ...open.slice(-LIMITS.incidents),
  ].map((i) => ({
    ...i,
    workloads: i.workloads.slice(-LIMITS.workloads),
    pods: i.pods.slice(-LIMITS.pods),
  }));
  return {
    v: 1,
    incidents,
    recent: s.recent.slice(-LIMITS.recent).map((o) => ({ ...o, pods: o.pods.slice(-LIMITS.recentPods) })),
    handled: s.handled.slice(-LIMITS.handled),
    cordoned: s.cordoned,
    ...(s.restoredAt ? { restoredAt: s.restoredAt } : {}),
  };
}

/** Trims a state to its caps (what a parse of its encoding would give back). */
export function boundState(s: NodeState): NodeState {
  const h = capState(s);
  return { ...s, incidents: h.incidents, recent: h.recent, handled: h.handled };
}

export function isOpen(i: Incident): boolean {
  return i.phase !== 'closed';
}

export function cmp(a: string, b: string): number {
  return Date.parse(a) - Date.parse(b);
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function isRecord(v: unknown): v is Record<string, string> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
