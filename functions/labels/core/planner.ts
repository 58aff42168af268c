/**
 * Label planning (pure): one node's labels, its labeler record and a GPU Inventory → the label
 * changes to make, each with its reason, and what was left alone and why. Three promises:
 *
 *  1. Only labels gpu-reflex set are changed or removed. The record (annotation
 *     `gpu-reflex.io/labeler`) holds each key it owns with the value it wrote; a key set by someone
 *     else, or changed by someone since gpu-reflex wrote it, is theirs: left alone and reported.
 *  2. Where GPU Feature Discovery runs (a label under `gfd.detect` that is not ours), nothing is
 *     written under GFD's prefix; a key there that gpu-reflex wrote before GFD came is handed over
 *     (left as it is, no longer owned), never removed out from under GFD.
 *  3. Planning on the state the plan leaves is a no-op.
 *
 * An inventory observed before the one the record says was last applied is stale (EventBridge does
 * not keep order): the plan does nothing.
 */
import * as z from 'zod';
import type { LabelerConfig } from './config.ts';
import { wantedLabels, type InventoryFacts } from './facts.ts';

export const LABELER_ANNOTATION = 'gpu-reflex.io/labeler';

/** What gpu-reflex wrote on a node: each key it owns with the value it set, and from which inventory. */
export interface LabelerRecord {
  labels: Record<string, string>;
  /** The `observedAt` of the inventory last applied. */
  observedAt: string;
}

const RecordSchema = z
  .object({ v: z.literal(1), labels: z.record(z.string(), z.string()), observedAt: z.string() })
  .strict();

/** The node's record; a corrupt one reads as owning nothing (so nothing is removed), with a warning. */
export function readLabelerRecord(annotations: Readonly<Record<string, string>>): {
  record: LabelerRecord;
  warning?: string;
} {
  const raw = annotations[LABELER_ANNOTATION];
  const empty = { labels: {}, observedAt: '' };
  if (raw === undefined) return { record: empty };
  try {
    const r = RecordSchema.parse(JSON.parse(raw));
    return { record: { labels: r.labels, observedAt: r.observedAt } };
  } catch {
    return {
      record: empty,
      warning: `${LABELER_ANNOTATION} is not a labeler record: gpu-reflex owns no label on this node until it sets one`,
    };
  }
}

export function encodeLabelerRecord(r: LabelerRecord): { annotations: Record<string, string | null> } {
  const labels = Object.fromEntries(Object.entries(r.labels).sort(([a], [b]) => (a < b ? -1 : 1)));
  return { annotations: { [LABELER_ANNOTATION]: JSON.stringify({ v: 1, labels, observedAt: r.observedAt }) } };
}

export interface NodeLabelFacts {
  name: string;
  labels: Readonly<Record<string, string>>;
  annotations: Readonly<Record<string, string>>;
  allocatable: Readonly<Record<string, string>>;
}

export interface LabelChange {
  key: string;
  /** null: absent before; `to: null` removes. */
  from: string | null;
  to: string | null;
  reason: string;
}

export interface LeftAlone {
  key: string;
  /** What the node says (null: absent). */
  value: string | null;
  /** What the inventory says it should (null: nothing). */
  wanted: string | null;
  why: 'set-by-someone-else' | 'changed-by-someone-else' | 'gfd-runs-here';
  reason: string;
}

export type LabelPlan =
  | { kind: 'noop'; node: string; reason: string; left: LeftAlone[]; warnings: string[] }
  | {
      kind: 'relabel';
      node: string;
      changes: LabelChange[];
      record: LabelerRecord;
      left: LeftAlone[];
      warnings: string[];
      reason: string;
    };

/**
 * Whether GFD runs: one of its labels is on the node and gpu-reflex did not write it (not a key it
 * owns, or one it owns that someone has since rewritten: GFD's own overwrite looks just so).
 */
export function gfdRuns(
  labels: Readonly<Record<string, string>>,
  owned: Readonly<Record<string, string>>,
  config: LabelerConfig,
): boolean {
  return Object.entries(labels).some(([k, v]) => k.startsWith(config.gfd.detect) && owned[k] !== v);
}

export function planLabels(node: NodeLabelFacts, inv: InventoryFacts, config: LabelerConfig): LabelPlan {
  const read = readLabelerRecord(node.annotations);
  const warnings = read.warning ? [read.warning] : [];
  const before = read.record;
  if (before.observedAt && Date.parse(inv.observedAt) < Date.parse(before.observedAt)) {
    return {
      kind: 'noop',
      node: node.name,
      reason: `inventory observed at ${inv.observedAt} is older than the one applied (${before.observedAt})`,
      left: [],
      warnings,
    };
  }
  const wanted = wantedLabels(inv, node.allocatable, config);
  const gfd = gfdRuns(node.labels, before.labels, config);
  const owned: Record<string, string> = { ...before.labels };
  const changes: LabelChange[] = [];
  const left: LeftAlone[] = [];
  const keys = [...new Set([...wanted.keys(), ...Object.keys(before.labels)])].sort();
  for (const key of keys) {
    const w = wanted.get(key);
    const want = w ? w.value : null;
    const why = w ? w.why : 'no longer a key the configuration names';
    const cur = node.labels[key] ?? null;
    const mine = key in owned;
    if (gfd && key.startsWith(config.gfd.prefix)) {
      // Handed over, or never taken: GFD keeps its own prefix.
      if (mine || (want !== undefined && want !== null))
        left.push({
          key,
          value: cur,
          wanted: want ?? null,
          why: 'gfd-runs-here',
          reason:
            `GPU Feature Discovery labels this node: gpu-reflex does not write ` +
            `under ${config.gfd.prefix}${mine ? ' (handed over)' : ''}`,
        });
      delete owned[key];
      continue;
    }
    if (mine && cur !== null && cur !== owned[key] && cur !== want) {
      left.push({
        key,
        value: cur,
        wanted: want ?? null,
        why: 'changed-by-someone-else',
        reason: `changed from ${owned[key]} to ${cur} since gpu-reflex set it: it is theirs now`,
      });
      delete owned[key];
      continue;
    }
    if (want === undefined) continue; // unknown yet: as it is
    if (mine) {
      if (want === null) {
        if (cur !== null) changes.push({ key, from: cur, to: null, reason: why });
        delete owned[key];
      } else {
        if (cur !== want) changes.push({ key, from: cur, to: want, reason: why });
        owned[key] = want;
      }
      continue;
    }
    if (want === null) continue;
    if (cur === null) {
      changes.push({ key, from: null, to: want, reason: why });
      owned[key] = want;
    } else if (cur !== want) {
      left.push({
        key,
        value: cur,
        wanted: want,
        why: 'set-by-someone-else',
        reason: `set to ${cur} by someone else (the inventory says ${want}): left alone`,
      });
    }
  }
  const sameOwned =
    JSON.stringify(Object.entries(owned).sort()) === JSON.stringify(Object.entries(before.labels).sort());
  if (changes.length === 0 && sameOwned && !read.warning) {
    return {
      kind: 'noop',
      node: node.name,
      reason:
        left.length > 0
          ? `labels as the inventory says, but ${left.length} left alone`
          : 'labels as the inventory says',
      left,
      warnings,
    };
  }
  const reason =
    changes.length > 0
      ? changes.map((c) => `${c.key}: ${c.reason}`).join('; ')
      : 'the labels gpu-reflex owns changed hands';
  return {
    kind: 'relabel',
    node: node.name,
    changes,
    record: { labels: owned, observedAt: inv.observedAt },
    left,
    warnings,
    reason,
  };
}
