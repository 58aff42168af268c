import type { Clock } from '../clock.ts';
import type { ApplyResult, Json, LeaseAttempt, LeaseState, LimitItem, LimitRangeInfo, QuotaInfo } from './model.ts';

// The ports that keep things in the cluster: quotas and limit ranges, the state store, leases (ports.ts).
export interface QuotaSpec {
  hard: Record<string, string>;
  labels?: Record<string, string>;
  /** Set (merged) with the spec; gpu-reflex keeps the previous hard values here for a rollback. */
  annotations?: Record<string, string>;
  /**
   * The hard values the caller decided on (null: it saw no quota). Given, a quota whose hard values changed since
   * (or created, or gone) is a ConflictError, not retried here: the caller re-reads and re-decides, for what it
   * keeps of the old values (the previous hard values above) was taken from them. The values, not the
   * resourceVersion: the quota controller moves that on with every change of status.used. A dry run, writing
   * nothing, does not check it.
   */
  basis?: Record<string, string> | null;
}

export interface LimitRangeSpec {
  limits: LimitItem[];
  labels?: Record<string, string>;
}

/**
 * ResourceQuotas and LimitRanges. `apply*` makes the object's spec (and the given labels) equal to
 * what is passed: create when absent, replace when different (with the resourceVersion it read,
 * re-reading on 409), nothing when equal. Reads of an absent object resolve `undefined`.
 */
export interface QuotaOps {
  getQuota(namespace: string, name: string): Promise<QuotaInfo | undefined>;
  /** Quotas in a namespace, or in all namespaces when omitted. */
  listQuotas(namespace?: string): Promise<QuotaInfo[]>;
  applyQuota(namespace: string, name: string, spec: QuotaSpec): Promise<ApplyResult>;
  /**
   * Deletes the quota if it is still at `resourceVersion` (a concurrent edit is a 409
   * ConflictError: re-read and re-decide). Idempotent: already gone is 'absent'.
   */
  deleteQuota(namespace: string, name: string, resourceVersion: string): Promise<'deleted' | 'absent'>;
  getLimitRange(namespace: string, name: string): Promise<LimitRangeInfo | undefined>;
  listLimitRanges(namespace?: string): Promise<LimitRangeInfo[]>;
  applyLimitRange(namespace: string, name: string, spec: LimitRangeSpec): Promise<ApplyResult>;
}

/**
 * A small key → JSON store kept in one ConfigMap (`gpu-reflex-state`), for cooldowns and counters
 * that must survive between invocations. `update` is atomic per call: it reads, applies the pure
 * `fn`, and writes with the resourceVersion it read; on 409 it re-reads and re-applies `fn`, so
 * `fn` may run more than once and must not have side effects. Returning `undefined` deletes the
 * key; returning a value equal to the current one writes nothing. The ConfigMap is created on the
 * first write.
 */
export interface StateStore {
  get(key: string): Promise<Json | undefined>;
  getAll(): Promise<Record<string, Json>>;
  update<T extends Json>(key: string, fn: (current: Json | undefined) => T | undefined): Promise<T | undefined>;
  /**
   * A store over its own object (`name`: a DNS label suffix), for keys that many invocations write
   * at once: every write to one object conflicts with every other, so one hot key there serializes
   * all writers of all keys. Optional: stores without it keep everything together.
   */
  shard?(name: string): StateStore;
}

/**
 * coordination.k8s.io/v1 Leases for exclusive work (one rebalance per pool at a time). Expiry is
 * judged with the caller's clock against the lease's `renewTime + leaseDurationSeconds`.
 */
export interface LeaseOps {
  /**
   * Takes the lease when it is free, expired, or already ours (then it renews, idempotent).
   * `acquired: false` when someone else holds it unexpired, or won a race for it.
   */
  tryAcquire(name: string, holder: string, durationS: number, clock: Clock): Promise<LeaseAttempt>;
  /** Extends our holding by its duration. `false` when we no longer hold it (lost or taken over). */
  renew(name: string, holder: string, clock: Clock): Promise<boolean>;
  /**
   * Frees the lease if we hold it (a free lease is no object: it is deleted). `false` (and no change) when we do not.
   * Idempotent.
   */
  release(name: string, holder: string): Promise<boolean>;
  /** The lease as it stands, or undefined when it is free (never created, or released). */
  get(name: string): Promise<LeaseState | undefined>;
}
