import type { KubeObject } from './types.ts';

/**
 * Replica creations a controller must try again. When admission refuses a ReplicaSet's or Job's
 * new pod (a ResourceQuota over its limit), the controller's sync fails and its key goes back on
 * the work queue with the default controller rate limiter (pkg/controller/replicaset
 * replica_set.go manageReplicas returns the error; processNextWorkItem calls
 * queue.AddRateLimited): per key, 5 ms doubling on each failure up to 1000 s
 * (k8s.io/client-go/util/workqueue default_rate_limiters.go DefaultControllerRateLimiter), and
 * forgotten (back to 5 ms) once a sync succeeds. An event on one of the owner's pods syncs it at
 * once (kick). So a replica refused once is created as soon as quota allows and the next retry
 * comes; it is never given up.
 */
const BASE_MS = 5;
const MAX_MS = 1_000_000;

export function backoffMs(failures: number): number {
  return Math.min(MAX_MS, BASE_MS * 2 ** Math.max(0, failures - 1));
}

interface Entry {
  /** The pods still to create, as the controller would build them again. */
  pods: KubeObject[];
  failures: number;
  due: number;
}

export class CreateRetries {
  private readonly byOwner = new Map<string, Entry>();

  /** A creation for `owner` was refused at `now`: queue the pod, and push the owner's next try back. */
  refused(owner: string, pod: KubeObject, now: number): number {
    const e = this.byOwner.get(owner) ?? { pods: [], failures: 0, due: now };
    if (!e.pods.includes(pod)) e.pods.push(pod);
    e.failures += 1;
    e.due = now + backoffMs(e.failures);
    this.byOwner.set(owner, e);
    return e.due;
  }

  /**
   * Runs the owners' retries that are due: `create` throws when refused again. Returns the next
   * due time (Infinity: none). An owner whose pods all went through is forgotten.
   */
  retryDue(now: number, create: (pod: KubeObject) => void): number {
    let next = Number.POSITIVE_INFINITY;
    for (const [owner, e] of [...this.byOwner]) {
      if (e.due > now) {
        next = Math.min(next, e.due);
        continue;
      }
      const left: KubeObject[] = [];
      for (const pod of e.pods) {
        try {
          create(pod);
        } catch {
          left.push(pod);
        }
      }
      if (left.length === 0) {
        this.byOwner.delete(owner);
        continue;
      }
      e.pods = left;
      // The controller would have tried at each due time since the last settle; nothing changed in
      // between (every API write settles), so those tries failed too: count them, as its backoff does.
      let t = e.due;
      do t += backoffMs(++e.failures);
      while (t <= now);
      e.due = t;
      next = Math.min(next, e.due);
    }
    return next;
  }

  /**
   * One of the owner's pods changed or went: the controller's informer enqueues the owner at once
   * (ReplicaSet controller deletePod/updatePod → enqueueRS, not rate limited), so its retry is due
   * now. Returns when it is due, or undefined for an owner with nothing to retry.
   */
  kick(owner: string, now: number): number | undefined {
    const e = this.byOwner.get(owner);
    if (!e) return undefined;
    e.due = Math.min(e.due, now);
    return e.due;
  }

  /** Pods waiting to be created again, per owner (for tests and the CLI log). */
  waiting(): Map<string, number> {
    return new Map([...this.byOwner].map(([k, e]) => [k, e.pods.length]));
  }
}
