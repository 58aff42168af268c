/**
 * The records of node replacements under way, in the state ConfigMap (key `replace.<node>`):
 * remediation writes and follows them (remediate/replacements.ts), autoscale-pools reads them so it
 * gives back none of a pool's nodes while a replacement grows it (`replacementsByPool`).
 */
import type { Json } from '../adapters/kube/model.ts';

export const REPLACEMENT_KEY_PREFIX = 'replace.';

export interface ReplacementRecord {
  node: string;
  incident: string;
  pool: string;
  instanceId: string;
  /** When the pool was asked to grow (ms). */
  since: number;
  newNode?: string;
  /** When the removal was asked (ms). */
  removeAt?: number;
  taskId?: string;
  gpus?: string[];
}

/** Every replacement on record, by node. */
export function replacementsIn(all: Readonly<Record<string, Json>>): Map<string, ReplacementRecord> {
  const out = new Map<string, ReplacementRecord>();
  for (const [k, v] of Object.entries(all))
    if (k.startsWith(REPLACEMENT_KEY_PREFIX) && v && typeof v === 'object')
      out.set(k.slice(REPLACEMENT_KEY_PREFIX.length), v as unknown as ReplacementRecord);
  return out;
}

/** Node pool → its replacements on record (for autoscale-pools). */
export function replacementsByPool(all: Readonly<Record<string, Json>>): Map<string, ReplacementRecord[]> {
  const out = new Map<string, ReplacementRecord[]>();
  for (const r of replacementsIn(all).values()) out.set(r.pool, [...(out.get(r.pool) ?? []), r]);
  return out;
}
