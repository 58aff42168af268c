import { podSchedulerRequests } from './pods.ts';
import {
  disruptionTarget,
  mayPreempt,
  pickCandidate,
  preemptedEvent,
  priorityOf,
  victimsOn,
  type Candidate,
} from './preemption.ts';
import { freeOn, unfitReason, type NodeView } from './scheduler.ts';
import { unhealthyCardsOf } from './gpushare.ts';
import type { Store } from './store.ts';
import type { Node, Pod } from './types.ts';

export interface NominationDeps {
  store: Store;
  iso: () => string;
  now: () => number;
  uid: () => string;
  /** Deletes a pod as the API does (grace period, controllers replace it). */
  deletePod: (pod: Pod) => void;
}

const keyOf = (pod: Pod) => `${pod.metadata.namespace}/${pod.metadata.name}`;

/**
 * The scheduler's preemption and its nominated pods (preemption.ts has the rules and their sources): which pending
 * pods wait for a node their victims are leaving, and the room those nominations hold for them.
 */
export class Nominations {
  /** Pending pod key → the node it was nominated to. */
  private readonly nominated = new Map<string, string>();
  /** Whether any pod of negative priority was seen: then even priority-0 pods may preempt. */
  private negative = false;
  private seq = 0;

  constructor(private readonly deps: NominationDeps) {}

  /** Whether any pod waits on a nomination (the scheduler then filters with nominated pods). */
  get active(): boolean {
    return this.nominated.size > 0;
  }

  /** Every pod write passes here: a pod no longer waiting drops its nomination (returns the node it held). */
  observe(key: string, pod: Pod, waiting: boolean): string | undefined {
    if (priorityOf(pod) < 0) this.negative = true;
    if (waiting) return undefined;
    const node = this.nominated.get(key);
    this.nominated.delete(key);
    return node;
  }

  /**
   * `freeOf` as a pod sees it: room on a node counts out the requests of other pods nominated there with a priority
   * at least its own (RunFilterPluginsWithNominatedPods).
   */
  freeFor(pod: Pod, freeOf: (n: Node) => Map<string, number>): (n: Node) => Map<string, number> {
    if (this.nominated.size === 0) return freeOf;
    const own = keyOf(pod);
    const prio = priorityOf(pod);
    return (n) => {
      const base = freeOf(n);
      let free: Map<string, number> | undefined;
      for (const [key, node] of this.nominated) {
        if (node !== n.metadata.name || key === own) continue;
        const [ns, name] = key.split('/') as [string, string];
        const held = this.deps.store.pod(ns, name);
        if (!held || held.spec.nodeName || priorityOf(held) < prio) continue;
        free ??= new Map(base);
        free.set('pods', (free.get('pods') ?? 0) - 1);
        for (const [r, v] of podSchedulerRequests(held)) free.set(r, (free.get(r) ?? 0) - v);
      }
      return free ?? base;
    };
  }

  /** A cheap first test: a pod of priority 0 or less finds no lower-priority victim unless some pod is below 0. */
  mayTry(pod: Pod): boolean {
    return priorityOf(pod) > 0 || this.negative;
  }

  /**
   * DefaultPreemption's PostFilter for a pod that fitted nowhere: the victims of the best candidate node are marked
   * and deleted, the pod nominated to that node. Returns the node, or undefined when preemption cannot help.
   */
  preempt(pod: Pod, nodes: readonly NodeView[]): string | undefined {
    if (!this.mayTry(pod)) return undefined;
    const { store } = this.deps;
    const key = keyOf(pod);
    const earlier = this.nominated.get(key);
    if (!mayPreempt(pod, earlier ? store.podsOnNode(earlier) : [])) return undefined;
    const candidates: Candidate[] = [];
    for (const v of nodes) {
      const name = v.name;
      const cards = unhealthyCardsOf(store, name);
      const c = victimsOn(
        pod,
        name,
        store.podsOnNode(name),
        (kept) => unfitReason(pod, v.node, freeOn(v.node, kept, cards)) === undefined,
        store.list('poddisruptionbudgets.policy'),
        (pdb) => store.pods(pdb.metadata.namespace),
      );
      if (c) candidates.push(c);
    }
    const best = pickCandidate(candidates);
    if (!best) return undefined;
    const at = this.deps.iso();
    for (const victim of best.victims) {
      const conditions = [
        ...(victim.status?.conditions ?? []).filter((c) => c.type !== 'DisruptionTarget'),
        disruptionTarget(pod, at),
      ];
      const marked = store.put('pods', { ...victim, status: { ...victim.status, conditions } }) as Pod;
      this.deps.deletePod(marked);
      // Event names are `<object>.<unix nanos, hex>`; the kubelet numbers its own from 0 in the same millisecond.
      const nanos = BigInt(this.deps.now()) * 1_000_000n + 500_000n + BigInt(this.seq++ % 500_000);
      store.put('events', preemptedEvent(victim, pod, best.node, at, this.deps.uid(), nanos));
    }
    this.nominated.set(key, best.node);
    const current = store.pod(pod.metadata.namespace ?? '', pod.metadata.name) ?? pod;
    store.put('pods', { ...current, status: { ...current.status, nominatedNodeName: best.node } });
    return best.node;
  }
}
