import {
  allocateOn,
  claimNameOf,
  claimsBlocked,
  CLAIMS,
  CLAIM_TEMPLATES,
  DEVICE_CLASSES,
  devicesInUse,
  evictionDue,
  podClaimEntries,
  POD_CLAIM_NAME,
  publishedDevices,
  type Claim,
} from './dra-allocator.ts';
import type { NodeView } from './scheduler.ts';
import type { Store } from './store.ts';
import type { KubeObject, Pod } from './types.ts';

/**
 * The DRA side of the simulated control plane (rules and sources: dra-allocator.ts): the
 * resourceclaim controller (claims from templates, consumers released, claims deallocated and
 * template claims deleted with their pod), the DynamicResources step of the scheduler, and the
 * device-taint eviction controller. Lifecycle calls it from `settle()`.
 */
export interface DraHost {
  store: Store;
  now(): number;
  iso(): string;
  uid(): string;
  generateName(prefix: string, taken: (name: string) => boolean): string;
  /** Deletes a pod as the API server does (grace period, controller replacement). */
  deletePod(pod: Pod): void;
}

type Status = NonNullable<Pod['status']> & { resourceClaimStatuses?: { name: string; resourceClaimName?: string }[] };

/** A pod status that keeps what the resourceclaim controller recorded in it. */
export function keepClaimStatuses(pod: Pod, status: Pod['status']): Pod['status'] {
  const claims = (pod.status as Status | undefined)?.resourceClaimStatuses;
  return claims ? ({ ...status, resourceClaimStatuses: claims } as Pod['status']) : status;
}

export class DraController {
  constructor(private readonly host: DraHost) {}

  /**
   * The resourceclaim controller's part for one pod: a claim made from each template entry that has
   * none yet (KEP-4381, "Ephemeral vs. persistent ResourceClaims lifecycle"). Returns the refused
   * template's message when a template is missing (the pod then waits), or whether it wrote anything.
   */
  makeClaims(pod: Pod): { wrote: boolean } | { reason: string } {
    const { store } = this.host;
    const ns = pod.metadata.namespace ?? 'default';
    const made: { name: string; resourceClaimName: string }[] = [];
    for (const e of podClaimEntries(pod)) {
      if (!e.name || !e.resourceClaimTemplateName || claimNameOf(pod, e.name)) continue;
      const t = store.get(CLAIM_TEMPLATES, ns, e.resourceClaimTemplateName);
      if (!t) return { reason: `resourceclaimtemplate.resource.k8s.io "${e.resourceClaimTemplateName}" not found` };
      const tSpec = (t.spec ?? {}) as { metadata?: { labels?: Record<string, string> }; spec?: unknown };
      const name = this.host.generateName(`${pod.metadata.name}-${e.name}-`, (n) => !!store.get(CLAIMS, ns, n));
      store.put(CLAIMS, {
        apiVersion: 'resource.k8s.io/v1',
        kind: 'ResourceClaim',
        metadata: {
          name,
          namespace: ns,
          uid: this.host.uid(),
          resourceVersion: '',
          creationTimestamp: this.host.iso(),
          ...(tSpec.metadata?.labels ? { labels: tSpec.metadata.labels } : {}),
          annotations: { [POD_CLAIM_NAME]: e.name },
          ownerReferences: [
            {
              apiVersion: 'v1',
              kind: 'Pod',
              name: pod.metadata.name,
              uid: pod.metadata.uid,
              controller: true,
              blockOwnerDeletion: true,
            },
          ],
        },
        spec: tSpec.spec ?? {},
      } as KubeObject);
      made.push({ name: e.name, resourceClaimName: name });
    }
    if (made.length === 0) return { wrote: false };
    const had = (pod.status as Status | undefined)?.resourceClaimStatuses ?? [];
    store.put('pods', { ...pod, status: { ...pod.status, resourceClaimStatuses: [...had, ...made] } as Pod['status'] });
    return { wrote: true };
  }

  /**
   * The scheduler's filter with DynamicResources: the first node in name order that passes `fits`
   * (the other filter plugins) and can have every claim of the pod, its claims then written
   * (allocated, the pod reserved); or the scheduler's message.
   */
  place(
    pod: Pod,
    nodes: readonly NodeView[],
    fits: (v: NodeView) => string | undefined,
  ): { node: string } | { reason: string } {
    const { store } = this.host;
    const ns = pod.metadata.namespace ?? 'default';
    const names = podClaimEntries(pod).map((e) => (e.name ? claimNameOf(pod, e.name) : undefined) ?? '');
    const claims = names.map((n) => store.get(CLAIMS, ns, n) as Claim | undefined);
    const devices = publishedDevices(store);
    const classes = new Map(store.list(DEVICE_CLASSES).map((c) => [c.metadata.name, c]));
    const blocked = claimsBlocked(pod, claims, names, devices, classes);
    if (blocked) return { reason: `0/${nodes.length} nodes are available: ${blocked}.` };
    const own = new Set(claims.map((c) => c!.metadata.uid));
    const inUse = devicesInUse(store, own);
    const reasons = new Map<string, number>();
    for (const v of nodes) {
      const why = fits(v);
      const got =
        why === undefined ? allocateOn(pod, v, claims as Claim[], devices, classes, inUse, this.host.iso()) : undefined;
      if (got && 'claims' in got) {
        for (const c of got.claims) store.put(CLAIMS, c);
        return { node: v.name };
      }
      const r = why ?? (got as { reason: string }).reason;
      reasons.set(r, (reasons.get(r) ?? 0) + 1);
    }
    const parts = [...reasons.entries()].map(([r, n]) => `${n} ${r}`).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    return { reason: `0/${nodes.length} nodes are available: ${parts.join(', ')}.` };
  }

  /**
   * A pod that ended or is gone no longer uses its claims: it leaves each one's `reservedFor`; a
   * claim with no consumer left is deallocated, and one made for that pod from a template is deleted
   * (its owner is gone: the garbage collector; KEP-5055 Design Details, KEP-4381 claim lifecycle).
   */
  release(pod: Pod): void {
    const { store } = this.host;
    const ns = pod.metadata.namespace ?? 'default';
    for (const e of podClaimEntries(pod)) {
      const name = e.name ? claimNameOf(pod, e.name) : undefined;
      const claim = name ? (store.get(CLAIMS, ns, name) as Claim | undefined) : undefined;
      if (!claim) continue;
      const reserved = (claim.status?.reservedFor ?? []).filter((r) => r.uid !== pod.metadata.uid);
      if (claim.metadata.ownerReferences?.some((o) => o.uid === pod.metadata.uid)) {
        store.remove(CLAIMS, ns, claim.metadata.name);
        continue;
      }
      if (reserved.length === (claim.status?.reservedFor ?? []).length && reserved.length > 0) continue;
      const status = reserved.length > 0 ? { ...claim.status, reservedFor: reserved } : {};
      store.put(CLAIMS, { ...claim, status });
    }
  }

  /**
   * The device-taint eviction controller: pods using a claim with a NoExecute-tainted device the claim
   * does not tolerate are deleted (at once, or `tolerationSeconds` after the taint's `timeAdded`).
   * Returns when the next such eviction is due, if one is.
   */
  evict(): number | undefined {
    const { store } = this.host;
    const claims = store.list(CLAIMS) as Claim[];
    if (claims.length === 0) return undefined;
    const devices = publishedDevices(store);
    let next: number | undefined;
    for (const c of claims) {
      const due = evictionDue(c, devices);
      if (due === undefined) continue;
      if (due > this.host.now()) {
        next = next === undefined ? due : Math.min(next, due);
        continue;
      }
      for (const r of c.status?.reservedFor ?? []) {
        const p = store.pod(c.metadata.namespace ?? 'default', r.name);
        if (p && p.metadata.uid === r.uid && !p.metadata.deletionTimestamp) this.host.deletePod(p);
      }
    }
    return next;
  }
}
