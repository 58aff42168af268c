/** What the quota planner (planner.ts) reads and what it decides, and the quota key of a resource. */
export interface QuotaFacts {
  /** Per resource: what Ready, schedulable nodes offer (a fenced GPU has left allocatable). */
  capacity: Readonly<Record<string, number>>;
  /** Namespace → resource → requested by its pods the quota counts (not Succeeded or Failed). */
  usage: Readonly<Record<string, Readonly<Record<string, number>>>>;
  /** Namespace → resource → gpu-reflex's quota now (hard), when it has one. */
  current: Readonly<Record<string, Readonly<Record<string, number>>>>;
  /**
   * MIG profile resource → its size in eighths of a GPU (mig-shares.ts), from the models of the
   * nodes that offer it. A profile of a MIG group missing here counts as a whole GPU (8).
   */
  gpuEighths?: Readonly<Record<string, number>>;
}

export interface QuotaChange {
  /** The quota key: `requests.nvidia.com/gpu`. */
  key: string;
  from: number | null;
  to: number;
}

export interface NamespaceQuota {
  namespace: string;
  team: string;
  /** Quota key → hard value. */
  hard: Record<string, number>;
  changes: QuotaChange[];
  reason: string;
}

export interface TeamShare {
  team: string;
  weight: number;
  /** Resource → numbers behind the team's hard value. */
  resources: Record<
    string,
    {
      usage: number;
      guarantee: number;
      want: number;
      /**
       * Its entitlement before lending: the larger of its guarantee and its usage plus its weighted
       * share of what is free (up to its max), less its part of a capacity loss.
       */
      base: number;
      /** What lending never takes from it: its guarantee, and its headroom above its usage (≤ base). */
      keep: number;
      hard: number;
    }
  >;
}

export interface QuotaPlan {
  /** Resource → shared out (T), and what the fleet offers; a MIG group's in eighths of a GPU. */
  pool: Record<string, { capacity: number; shared: number; unit?: 'eighths of a GPU' }>;
  teams: TeamShare[];
  namespaces: NamespaceQuota[];
  /** Things a person should know: usage that does not fit, a guarantee capacity cannot back. */
  warnings: string[];
}

export const quotaKey = (resource: string) => `requests.${resource}`;
