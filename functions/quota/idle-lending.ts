/**
 * Idle GPUs lent through quotas (issue #33, docs/cost.md "Lending"): a device idle-gpus found idle,
 * whose owner was told and whose namespace (or pool) policy says `lend: true`, counts as free capacity
 * in the quota planner — the owner's usage is counted without it, so the planner's entitlement and
 * lending (core/lend.ts) offer it to teams that want more. It is taken back at the first rewrite after
 * the owner's utilization returns: idle-gpus drops the loan from its record, the owner's usage counts it
 * again, and a rise up to a team's floor is never held back (core/lend.ts).
 *
 * Evidence, not time: a loan is read from the node's `gpu-reflex.io/idle-gpus` record and holds only
 * - until its `until` (the last idle window's end + the policy's gap): a stale record lends nothing;
 * - while the very pod it names (by UID) is on that node, not terminal, asking for the resource;
 * - on a node whose capacity the planner counts (not cordoned, not out), for a GPU remediation did not fence (a
 *   fence list that cannot be read lends nothing there);
 * - for a team namespace and a resource the quota config manages;
 * and never more than the pod asks for. Pure: the wiring's dry run covers what the rewrite then writes.
 */
import type { NodeInfo, PodInfo } from '../adapters/kube/model.ts';
import { QUARANTINED_GPUS_ANNOTATION } from '../lib/node-state.ts';
import { readIdleRecord } from '../lib/idle-record.ts';
import { resourcesOf, type QuotaConfig } from './core/config.ts';
import type { QuotaFacts } from './core/planner.ts';
import type { CapacityOut } from './facts.ts';

/** One idle device the planner counts as free. */
export interface IdleLoan {
  namespace: string;
  pod: string;
  node: string;
  /** The GPU or MIG device UUID. */
  device: string;
  resource: string;
  /** Epoch ms the idle run began. */
  since: number;
}

/** A record's loan the planner did not take, and why (logged: it is the cautious side). */
export interface LoanRefused {
  node: string;
  pod: string;
  device: string;
  why: string;
}

export interface IdleLending {
  loans: IdleLoan[];
  refused: LoanRefused[];
  /** Per namespace and resource: how much of its usage is lent. */
  lent: Record<string, Record<string, number>>;
}

/** The GPUs remediation holds on a node; undefined when its list cannot be read (then any of them may be). */
function quarantined(annotations: Readonly<Record<string, string>>): Set<string> | undefined {
  try {
    const list: unknown = JSON.parse(annotations[QUARANTINED_GPUS_ANNOTATION] ?? '[]');
    return Array.isArray(list) ? new Set(list.filter((x): x is string => typeof x === 'string')) : undefined;
  } catch {
    return undefined;
  }
}

/** The loans the nodes' idle-gpus records hold now, each checked against the cluster as read. */
export function idleLending(
  config: QuotaConfig,
  nodes: readonly NodeInfo[],
  pods: readonly PodInfo[],
  out: readonly CapacityOut[],
  now: number,
): IdleLending {
  const resources = new Set(resourcesOf(config));
  const teamNs = new Set(config.teams.flatMap((t) => t.namespaces));
  const nodeOut = new Set(out.filter((o) => o.gpus === undefined && o.instances === undefined).map((o) => o.node));
  const byUid = new Map(pods.map((p) => [p.uid, p]));
  const result: IdleLending = { loans: [], refused: [], lent: {} };
  const taken = new Map<string, number>(); // `${uid} ${resource}` → devices lent so far
  for (const n of [...nodes].sort((a, b) => a.name.localeCompare(b.name))) {
    const { record } = readIdleRecord(n.annotations ?? {});
    const fenced = quarantined(n.annotations ?? {});
    for (const t of record.tracks) {
      const loan = t.lend;
      if (!loan || t.notifiedAt === undefined) continue;
      const refuse = (why: string) =>
        result.refused.push({ node: n.name, pod: `${t.namespace}/${t.pod}`, device: t.device, why });
      if (loan.until <= now) {
        refuse(
          `its last idle window ended ${Math.round((now - t.lastEnd) / 60_000)} min ago: unseen time lends nothing`,
        );
        continue;
      }
      if (!teamNs.has(t.namespace) || !resources.has(loan.resource)) continue; // not the planner's to lend
      if (nodeOut.has(n.name)) {
        refuse('its node gives no capacity to the quota planner');
        continue;
      }
      // Unreadable is not "none fenced": lending takes quota from the owner, so it needs the list to say so.
      if (!fenced) {
        refuse(`its ${QUARANTINED_GPUS_ANNOTATION} cannot be read: the GPU may be fenced by remediation`);
        continue;
      }
      if (fenced.has(t.gpu) || (t.mig !== undefined && fenced.has(t.mig))) {
        refuse('its GPU is fenced by remediation');
        continue;
      }
      const p = byUid.get(loan.uid);
      if (!p || p.namespace !== t.namespace || p.name !== t.pod || p.nodeName !== n.name) {
        refuse(`pod ${t.namespace}/${t.pod} (uid ${loan.uid}) is not on ${n.name}: the record names a pod not there`);
        continue;
      }
      if (p.phase === 'Succeeded' || p.phase === 'Failed') continue; // quota no longer counts it anyway
      const asks = (p.requests ?? p.extendedResources)[loan.resource] ?? 0;
      const k = `${loan.uid} ${loan.resource}`;
      if ((taken.get(k) ?? 0) >= asks) {
        refuse(`pod ${t.namespace}/${t.pod} asks for ${asks} ${loan.resource}: no more of it to lend`);
        continue;
      }
      taken.set(k, (taken.get(k) ?? 0) + 1);
      result.loans.push({
        namespace: t.namespace,
        pod: t.pod,
        node: n.name,
        device: t.device,
        resource: loan.resource,
        since: t.since,
      });
      const m = (result.lent[t.namespace] ??= {});
      m[loan.resource] = (m[loan.resource] ?? 0) + 1;
    }
  }
  return result;
}

/** The facts with each owner's usage less what it lends: the planner offers the idle devices to others. */
export function lendIdle<F extends QuotaFacts>(facts: F, lending: IdleLending): F {
  if (lending.loans.length === 0) return facts;
  const usage = Object.fromEntries(
    Object.entries(facts.usage).map(([ns, u]) => [
      ns,
      Object.fromEntries(Object.entries(u).map(([r, v]) => [r, Math.max(0, v - (lending.lent[ns]?.[r] ?? 0))])),
    ]),
  );
  return { ...facts, usage };
}

/** `lends 1 idle nvidia.com/gpu (notebook-a, idle since …)` for a namespace that lends, else nothing. */
export function loanWords(lending: IdleLending, namespace: string): string[] {
  const mine = lending.loans.filter((l) => l.namespace === namespace);
  if (mine.length === 0) return [];
  const per = Object.entries(lending.lent[namespace] ?? {}).map(([r, v]) => `${v} idle ${r}`);
  const pods = [...new Set(mine.map((l) => `${l.pod} idle since ${new Date(l.since).toISOString()}`))];
  return [`lends ${per.join(', ')} (${pods.join('; ')}): taken back when its utilization returns`];
}
