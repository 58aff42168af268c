// Over 300 lines (issue #26 allows five such files, each saying why): the simulated cluster's controllers (the
// scheduler's queue, the kubelet's starts and terminations, the ReplicaSet/StatefulSet/DaemonSet/Job controllers) run
// in one settle loop over shared caches (capacity epoch, shape memo, first-fit hints) that keep a 10,000-node storm
// cheap; splitting them first needs those caches behind one interface. Preemption is already apart (nominations.ts).
import { ClusterRoleAggregation } from './clusterrole-aggregation.ts';
import { KUBELET_STATUS_SECONDS, KubeletEvents } from './kubelet-events.ts';
import { daemonPod, eligible, hasDaemonPod, selects } from './daemonsets.ts';
import { MigManager } from './mig-manager.ts';
import { CreateRetries } from './create-retries.ts';
import { notReady, nowReady, readyDelayMs } from './readiness.ts';
import {
  controllerOf,
  holdsResources,
  isTerminal,
  podRequests,
  runningStatus,
  pendingStatus,
  succeededStatus,
} from './pods.ts';
import { qualifiedName, type ResourceDef } from './resources.ts';
import { PODGROUPS, scheduleGangs, type PodGroup } from './volcano.ts';
import { ANTI_AFFINITY_REASON, antiAffinityAllows, hasHostnameAntiAffinity } from './pod-anti-affinity.ts';
import {
  allocatedAnnotations,
  bindAnnotations,
  cardsOf,
  gpuMemRequest,
  tightestCard,
  unhealthyCardsOf,
  UNHEALTHY_GPU_PREFIX,
} from './gpushare.ts';
import {
  SCHEDULING_GATED,
  SCHEDULING_GATED_MESSAGE,
  scheduledReason,
  schedulingGated,
  cardRoomOf,
  freeOn,
  matchesNodeAffinity,
  nodeView,
  pickNode,
  tolerates,
  unfitReason,
  type NodeView,
} from './scheduler.ts';
import { UnfitShapes } from './unfit-shapes.ts';
import { Nominations } from './nominations.ts';
import { priorityOf } from './preemption.ts';
import { CLAIMS, CLAIM_TEMPLATES, DEVICE_CLASSES, hasClaims, SLICES, TAINT_RULES } from './dra-allocator.ts';
import { DraController, keepClaimStatuses } from './dra-controller.ts';
import type { Store, StoreEvent } from './store.ts';
import type { Clock, KubeObject, Node, Pod, PodSpec, Taint } from './types.ts';

/**
 * What the cluster's other components do after the API server stored a change: the scheduler
 * binds pending pods, the kubelet finishes terminating pods when their grace period ends on the
 * injected clock, ReplicaSet/Job/StatefulSet controllers replace deleted pods, the DaemonSet
 * controller keeps one pod per eligible node, the taint manager evicts pods from NoExecute nodes.
 *
 * All of it runs synchronously in `settle()`, called after every write and on `advance()`, so
 * the simulation is deterministic: no timers, no background work.
 *
 * Scheduling cost stays flat under node churn and fleet size: a pending pod that fitted nowhere is
 * retried only after a node it may use gained room (the "capacity epoch" moved: a pod left the node,
 * it appeared or lost a taint/cordon), and then only on the nodes that gained room since
 * (unfit-shapes.ts), so cordoning 150 nodes a second does not rescan the fleet per pending pod, and
 * a pod leaving one pool does not walk the waiting pods of the others.
 */
const ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';
/** A pod annotated with this many seconds exits 0 (phase Succeeded) that long after it starts. */
export const COMPLETE_AFTER = 'sim.gpu-reflex.io/complete-after-seconds';
type CreatePod = (pod: KubeObject) => Pod;
/** The last instant clients can parse back (Go's RFC 3339 stops at year 9999). */
const MAX_TIME_MS = Date.UTC(9999, 11, 31, 23, 59, 59);

export class Lifecycle {
  private epoch = 0;
  private readonly pending = new Set<string>();
  /** Gated pods whose PodScheduled condition does not say SchedulingGated yet (scheduler.ts). */
  private readonly gatedToMark = new Set<string>();
  private readonly tried = new Map<string, number>();
  private readonly terminating = new Map<string, number>();
  private readonly replaced = new Set<string>();
  private readonly noExecuteCheck = new Set<string>();
  /** Running pods that finish by themselves (annotation COMPLETE_AFTER): key → when. */
  private readonly completing = new Map<string, number>();
  /** Replicas admission refused, which their controllers create again with backoff. */
  private readonly retries = new CreateRetries();
  /** Running pods whose readiness probe passes later (annotation READY_AFTER, readiness.ts): key → when. */
  private readonly readying = new Map<string, number>();
  /**
   * No termination or completion is due before this (a lower bound: entries only lower it). settle()
   * runs on every API request; in a storm 600 pods sit in their grace period, and scanning them
   * all per request was a visible share of the simulator's CPU.
   */
  private dueAt = Number.POSITIVE_INFINITY;
  /**
   * Shapes of waiting pods that may bind now and were not tried since: a new pod of the shape, or
   * room on a node the shape may use. Only their pods are looked at in a pass, so a pod leaving a
   * node in one pool does not walk the 4,000 waiting pods of every other pool.
   */
  private readonly dirtyShapes = new Set<string>();
  /** Waiting pods by shape, and each one's place in the queue (first come, first bound). */
  private readonly byShape = new Map<string, Set<string>>();
  private readonly queued = new Map<string, number>();
  /** Each waiting pod's priority, kept as it is filed (the queue's first key; read once per write, not per pass). */
  private readonly priorities = new Map<string, number>();
  private queueSeq = 0;
  /**
   * Node label keys the waiting pods select on, counted: each waiting pod's keys are added when it
   * starts waiting and removed when it stops (or changes), so a node label change asks a map
   * instead of walking every waiting pod (600 of them in a storm, once per node patch).
   */
  private readonly selectedBy = new Map<string, string[]>();
  private readonly selectedCount = new Map<string, number>();
  /** The fleet in name order, as the scheduler reads it (scheduler.ts NodeView). */
  private sortedNodes: NodeView[] | undefined;
  /** What each node has left, kept across scheduling runs; dropped when its pods or the node change. */
  private readonly freeCache = new Map<string, Map<string, number>>();
  /**
   * First-fit scan hints: for pods of one shape (requests, tolerations, selectors), nodes before
   * `index` did not fit at capacity epoch `epoch` over node list `list`. Capacity only shrinks
   * while the epoch stands, so they still do not: seeding 6,000 pods stays linear, not quadratic.
   */
  private readonly hints = new Map<string, { epoch: number; list: number; index: number }>();
  /**
   * Hinted shapes by a node label key they select on. A label change that no waiting pod selects
   * on moves no epoch, yet it can bring a node before a hint's index into the shape's pool (a node
   * relabelled into it): that shape's hint no longer holds (the property test's counterexample).
   */
  private readonly hintsByKey = new Map<string, Set<string>>();
  private nodeListVersion = 0;
  /** Pod shapes that fitted no node, and the nodes that gained room since (unfit-shapes.ts). */
  private readonly unfit = new UnfitShapes();
  /** Each waiting pod's shape, computed when it starts waiting (not once per scheduling pass). */
  private readonly shapeOf = new Map<string, string>();
  /** Where each node sits in sortedNodes: a node change replaces it there instead of re-sorting the fleet. */
  private nodeIndex = new Map<string, number>();
  /** Nodes the DaemonSet controller must look at next settle; 'all' after a DaemonSet changes. */
  private daemonNodes: Set<string> | 'all' = new Set();
  /** Pods (`ns/name`) with required hostname anti-affinity: while any exists, fits look at pods too. */
  private readonly antiAffine = new Set<string>();
  private nameSeq = 0;
  private ipSeq = 0;
  /** Set by the cluster: builds a pod through admission (limit ranges, quota); throws ApiError. */
  admit: CreatePod = (p) => p as Pod;
  /** kube-controller-manager's ClusterRole aggregation (clusterrole-aggregation.ts). */
  private readonly aggregation: ClusterRoleAggregation;
  /** The Events the nodes' kubelets record: NodeNotSchedulable, Killing (kubelet-events.ts). */
  private readonly kubelet: KubeletEvents;
  /** DRA: claims, their allocation and device-taint eviction (dra-controller.ts). */
  private readonly dra: DraController;
  /** Waiting pods with ResourceClaims, scheduled by the DRA path (not by shape). */
  private readonly draPending = new Set<string>();
  /** When each was last tried: capacity epoch, DRA object changes, node list. */
  private readonly draTried = new Map<string, string>();
  private draEpoch = 0;
  /** Pods with claims that ended or went: the resourceclaim controller releases their claims. */
  private readonly draReleased = new Map<string, Pod>();
  /** Preemption and the pods nominated to a node while their victims leave (nominations.ts). */
  private readonly nominations: Nominations;
  /** Set by the cluster: its deterministic UIDs, for the objects controllers create. */
  uid: () => string = () => '00000000-0000-4000-8000-000000000000';
  /** Controller failures (quota refused a replacement), kept for tests and the CLI log. */
  readonly failures: string[] = [];

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly mig: MigManager = new MigManager({}, 30),
    kubeletStatusSeconds = KUBELET_STATUS_SECONDS,
  ) {
    this.aggregation = new ClusterRoleAggregation(store);
    this.kubelet = new KubeletEvents(
      store,
      () => clock.now(),
      () => this.uid(),
      kubeletStatusSeconds * 1000,
    );
    this.dra = new DraController({
      store,
      now: () => clock.now(),
      iso: () => this.iso(),
      uid: () => this.uid(),
      generateName: (prefix, taken) => this.generateName(prefix, taken),
      deletePod: (pod) => this.deletePod(pod),
    });
    this.nominations = new Nominations({
      store,
      iso: () => this.iso(),
      now: () => clock.now(),
      uid: () => this.uid(),
      deletePod: (pod) => this.deletePod(pod),
    });
    store.subscribe((e) => {
      this.mig.observe(e);
      this.observe(e);
    });
  }

  /** `prefix` plus five characters, deterministic per run; `taken` says whether a name is in use. */
  generateName(prefix: string, taken: (name: string) => boolean): string {
    for (;;) {
      let n = (++this.nameSeq * 2654435761) >>> 0;
      let suffix = '';
      for (let i = 0; i < 5; i++) {
        suffix += ALPHABET[n % ALPHABET.length];
        n = Math.floor(n / ALPHABET.length) + i * 7919;
      }
      const name = prefix + suffix;
      if (!taken(name)) return name;
    }
  }

  private iso(ms = this.clock.now()): string {
    return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
  }

  running(pod: Pod, node: string): Pod['status'] {
    const n = ++this.ipSeq;
    const status = runningStatus(pod, node, this.iso(), `10.244.${(n >> 8) & 255}.${n & 255}`)!;
    const delay = readyDelayMs(pod);
    if (delay === 0) return status;
    const due = this.clock.now() + delay;
    this.readying.set(`${pod.metadata.namespace}/${pod.metadata.name}`, due);
    this.dueAt = Math.min(this.dueAt, due);
    return notReady(status, this.iso());
  }

  /**
   * `annotations`: what ACK's gpushare extender patches onto the pod before its Binding (its card);
   * the gpushare device plugin then marks it assigned when the kubelet asks it to Allocate, as the
   * container starts (gpushare.ts).
   */
  bind(pod: Pod, node: string, annotations?: Record<string, string>): void {
    let bound: Pod = { ...pod, spec: { ...pod.spec, nodeName: node } };
    if (annotations) {
      const withCard = { ...bound.metadata.annotations, ...annotations };
      this.store.put('pods', (bound = { ...bound, metadata: { ...bound.metadata, annotations: withCard } }));
      const assigned = { ...withCard, ...allocatedAnnotations(this.clock.now()) };
      bound = { ...bound, metadata: { ...bound.metadata, annotations: assigned } };
    }
    this.store.put('pods', { ...bound, status: keepClaimStatuses(pod, this.running(bound, node)) });
  }

  /** The card ACK's gpushare extender gives a pod bound to `node` (its annotations), if it asks for one. */
  private gpushareCard(pod: Pod, node: string, free: Map<string, number>): Record<string, string> | undefined {
    const mem = gpuMemRequest(pod);
    const n = mem > 0 ? this.store.node(node) : undefined;
    const cards = n ? cardsOf(n) : undefined;
    const room = cardRoomOf(free);
    const card = cards && room ? tightestCard(room, mem) : undefined;
    return card === undefined ? undefined : bindAnnotations(pod, card, cards!.perCard, this.clock.now());
  }

  created(r: ResourceDef, _obj: KubeObject): void {
    if (r.plural === 'daemonsets') this.daemonNodes = 'all';
  }

  /** Deletes an object as its kind does: pods honour grace periods, owners cascade. */
  delete(r: ResourceDef, obj: KubeObject, gracePeriodSeconds?: number): KubeObject {
    const ns = obj.metadata.namespace ?? '';
    if (r.plural === 'pods') return this.deletePod(obj as Pod, gracePeriodSeconds);
    if (r.plural === 'nodes') {
      for (const p of this.store.podsOnNode(obj.metadata.name)) this.deletePod(p, 0);
      // The garbage collector removes the node's Lease (its owner reference names the node).
      this.store.remove('leases.coordination.k8s.io', 'kube-node-lease', obj.metadata.name);
    }
    if (r.plural === 'daemonsets') {
      for (const p of this.store.pods(ns))
        if (controllerOf(p)?.uid === obj.metadata.uid) this.deletePod(p, undefined, false);
    }
    if (r.plural === 'namespaces') {
      for (const res of [
        'pods',
        'configmaps',
        'events',
        'resourcequotas',
        'limitranges',
        'poddisruptionbudgets.policy',
        'leases.coordination.k8s.io',
        'daemonsets.apps',
      ]) {
        for (const o of this.store.list(res, obj.metadata.name)) {
          if (res === 'pods') this.replaced.add(o.metadata.uid);
          this.store.remove(res, obj.metadata.name, o.metadata.name);
        }
      }
    }
    return this.store.remove(qualifiedName(r), ns, obj.metadata.name) ?? obj;
  }

  private deletePod(pod: Pod, grace?: number, replace = true): KubeObject {
    const ns = pod.metadata.namespace ?? '';
    const key = `${ns}/${pod.metadata.name}`;
    const g = grace ?? pod.spec.terminationGracePeriodSeconds ?? 30;
    if (!replace) this.replaced.add(pod.metadata.uid);
    if (!pod.spec.nodeName || g <= 0 || isTerminal(pod)) {
      this.terminating.delete(key);
      const gone = this.store.remove('pods', ns, pod.metadata.name) ?? pod;
      this.replace(pod, true);
      return gone;
    }
    // An int64 grace period can pass the last instant a timestamp can say: then it ends "never".
    const deadline = Math.min(this.clock.now() + g * 1000, MAX_TIME_MS);
    const existing = this.terminating.get(key);
    if (existing !== undefined && existing <= deadline) return pod;
    this.terminating.set(key, deadline);
    this.dueAt = Math.min(this.dueAt, deadline);
    const out = this.store.put('pods', {
      ...pod,
      metadata: { ...pod.metadata, deletionTimestamp: this.iso(deadline), deletionGracePeriodSeconds: g },
    });
    this.replace(pod, false);
    return out;
  }

  /** What the pod's controller does about a pod going away. `gone`: it is removed, not just terminating. */
  private replace(pod: Pod, gone: boolean): void {
    const owner = controllerOf(pod);
    if (!owner || this.replaced.has(pod.metadata.uid) || pod.status?.phase === 'Succeeded') return;
    if (owner.kind === 'DaemonSet') {
      if (gone && pod.spec.nodeName) this.markDaemonNode(pod.spec.nodeName);
      return;
    }
    const recreateNow = owner.kind === 'ReplicaSet' || owner.kind === 'Job';
    // A StatefulSet waits for the old pod to be gone, then recreates it under the same name.
    if (!(recreateNow || (owner.kind === 'StatefulSet' && gone))) return;
    this.replaced.add(pod.metadata.uid);
    const spec: PodSpec = { ...pod.spec };
    delete spec.nodeName;
    const name =
      owner.kind === 'StatefulSet'
        ? pod.metadata.name
        : this.generateName(
            pod.metadata.generateName ?? `${owner.name}-`,
            (n) => this.store.pod(pod.metadata.namespace ?? '', n) !== undefined,
          );
    const fresh = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name,
        namespace: pod.metadata.namespace,
        ...(pod.metadata.generateName ? { generateName: pod.metadata.generateName } : {}),
        ...(pod.metadata.labels ? { labels: pod.metadata.labels } : {}),
        ...(pod.metadata.annotations ? { annotations: pod.metadata.annotations } : {}),
        ownerReferences: pod.metadata.ownerReferences,
      },
      spec,
    } as unknown as KubeObject;
    const ownerKey = `${owner.kind} ${pod.metadata.namespace}/${owner.name}`;
    const body = structuredClone(fresh); // admission stamps what it admits; a retry starts from the controller's body
    try {
      this.store.put('pods', this.admit(fresh));
    } catch (err) {
      this.failures.push(`${ownerKey}: ${(err as Error).message}`);
      // The controller tries again with backoff (create-retries.ts), never gives the replica up.
      this.dueAt = Math.min(this.dueAt, this.retries.refused(ownerKey, body, this.clock.now()));
    }
  }

  /** Finishes due terminations, applies NoExecute taints, runs the DaemonSet controller, schedules. */
  settle(): void {
    const now = this.clock.now();
    if (now >= this.dueAt) this.finishDue(now);
    for (const nodeName of [...this.noExecuteCheck]) {
      this.noExecuteCheck.delete(nodeName);
      const taints = (this.store.node(nodeName)?.spec?.taints ?? []).filter((t) => t.effect === 'NoExecute');
      for (const p of this.store.podsOnNode(nodeName)) {
        if (!p.metadata.deletionTimestamp && taints.some((t) => !tolerates(p.spec.tolerations, t))) this.deletePod(p);
      }
    }
    if (this.draReleased.size > 0) {
      for (const pod of this.draReleased.values()) this.dra.release(pod);
      this.draReleased.clear();
    }
    if (this.store.count(CLAIMS) > 0) {
      const next = this.dra.evict();
      if (next !== undefined) this.dueAt = Math.min(this.dueAt, next);
    }
    this.mig.settle(this.store, now);
    this.aggregation.settle();
    if (this.daemonNodes === 'all' || this.daemonNodes.size > 0) this.runDaemonSets();
    this.schedule();
    if (this.store.count(PODGROUPS) > 0) this.scheduleGangs();
    this.kubelet.settle(now);
  }

  /** Volcano's allocate action over the PodGroups (volcano.ts): a group's pods bind together or not at all. */
  private scheduleGangs(): void {
    const freeOf = (n: Node) => {
      const name = n.metadata.name;
      let f = this.freeCache.get(name);
      if (!f)
        this.freeCache.set(name, (f = freeOn(n, this.store.podsOnNode(name), unhealthyCardsOf(this.store, name))));
      return f;
    };
    scheduleGangs({
      groups: this.store.list(PODGROUPS) as PodGroup[],
      pods: this.store.pods(),
      nodes: this.nodesByName(),
      freeOf,
      bind: (pod, node) => this.bind(pod, node),
      pending: (pod, message) =>
        this.store.put('pods', { ...pod, status: pendingStatus(pod, 'Unschedulable', message) }),
      groupStatus: (g, status) => this.store.put(PODGROUPS, { ...g, status }),
      podFits: (pod, node, placed) =>
        antiAffinityAllows(pod, [...this.store.podsOnNode(node.metadata.name), ...placed]),
    });
  }

  /** Terminations whose grace period ended and pods whose run time is over; recomputes dueAt. */
  private finishDue(now: number): void {
    // Entries set while this runs lower dueAt themselves (Math.min), so start from infinity.
    this.dueAt = Number.POSITIVE_INFINITY;
    for (const [key, deadline] of [...this.terminating]) {
      if (deadline > now) {
        this.dueAt = Math.min(this.dueAt, deadline);
        continue;
      }
      this.terminating.delete(key);
      const [ns, name] = key.split('/') as [string, string];
      const pod = this.store.pod(ns, name);
      if (!pod) continue;
      this.store.remove('pods', ns, name);
      this.replace(pod, true);
    }
    for (const [key, due] of [...this.completing]) {
      if (due > now) {
        this.dueAt = Math.min(this.dueAt, due);
        continue;
      }
      this.completing.delete(key);
      const [ns, name] = key.split('/') as [string, string];
      const pod = this.store.pod(ns, name);
      if (pod?.status?.phase === 'Running' && !pod.metadata.deletionTimestamp)
        this.store.put('pods', { ...pod, status: succeededStatus(pod, this.iso()) });
    }
    const retryAt = this.retries.retryDue(now, (body) => {
      const pod = structuredClone(body) as Pod;
      const owner = controllerOf(pod);
      const ns = pod.metadata.namespace ?? '';
      // A ReplicaSet or Job names each attempt afresh (generateName); a StatefulSet keeps its pod's name.
      if (owner?.kind !== 'StatefulSet')
        pod.metadata.name = this.generateName(
          pod.metadata.generateName ?? `${owner?.name}-`,
          (n) => this.store.pod(ns, n) !== undefined,
        );
      try {
        this.store.put('pods', this.admit(pod as unknown as KubeObject));
      } catch (err) {
        this.failures.push(`${owner?.kind} ${ns}/${owner?.name}: ${(err as Error).message}`);
        throw err;
      }
    });
    this.dueAt = Math.min(this.dueAt, retryAt);
    for (const [key, due] of [...this.readying]) {
      if (due > now) {
        this.dueAt = Math.min(this.dueAt, due);
        continue;
      }
      this.readying.delete(key);
      const [ns, name] = key.split('/') as [string, string];
      const pod = this.store.pod(ns, name);
      if (pod?.status?.phase === 'Running' && !pod.metadata.deletionTimestamp)
        this.store.put('pods', { ...pod, status: nowReady(pod.status, this.iso()) });
    }
  }

  private schedule(): void {
    // Gated pods are never tried; their condition says why (scheduler.ts schedulingGated).
    for (const key of this.gatedToMark) {
      this.gatedToMark.delete(key);
      const [ns, name] = key.split('/') as [string, string];
      const pod = this.store.pod(ns, name);
      if (pod && schedulingGated(pod) && !pod.spec.nodeName && scheduledReason(pod) !== SCHEDULING_GATED)
        this.store.put('pods', { ...pod, status: pendingStatus(pod, SCHEDULING_GATED, SCHEDULING_GATED_MESSAGE) });
    }
    if (this.draPending.size > 0) this.scheduleClaimed();
    // Every waiting pod was tried at this capacity epoch and none came since: nothing can bind.
    if (this.dirtyShapes.size === 0) return;
    const keys = [...this.dirtyShapes].flatMap((shape) => [...(this.byShape.get(shape) ?? [])]);
    this.dirtyShapes.clear();
    // The active queue takes higher priority first, then the earlier arrival (queuesort PrioritySort,
    // pkg/scheduler/framework/plugins/queuesort/priority_sort.go).
    const prio = (k: string) => this.priorities.get(k) ?? 0;
    keys.sort((a, b) => prio(b) - prio(a) || this.queued.get(a)! - this.queued.get(b)!);
    let nodes: NodeView[] | undefined;
    const free = this.freeCache;
    const freeOf = (n: Node) => {
      let f = free.get(n.metadata.name);
      const name = n.metadata.name;
      if (!f) free.set(name, (f = freeOn(n, this.store.podsOnNode(name), unhealthyCardsOf(this.store, name))));
      return f;
    };
    for (const key of keys) {
      if (this.tried.get(key) === this.epoch || !this.pending.has(key)) continue;
      const [ns, name] = key.split('/') as [string, string];
      const pod = this.store.pod(ns, name);
      if (!pod) continue;
      const shape = this.shapeOf.get(key)!;
      // While pods wait on nominations, a fit depends on the pod's priority: no shape memo holds (nominations.ts).
      if (this.nominations.active) {
        nodes ??= this.nodesByName();
        this.scheduleNominated(key, pod, nodes, freeOf);
        continue;
      }
      // Shapes that fitted nowhere (unfit-shapes.ts): binding only takes room, so the next pod of
      // the same shape fits nowhere either, or only on a node that gained room since.
      const known = this.unfit.recall(shape, this.epoch, this.nodeListVersion);
      let pick: { node: string; index: number } | { reason: string };
      // Inter-pod anti-affinity makes a fit depend on the pods a node runs: no shape memo holds then.
      if (this.antiAffine.size > 0) {
        nodes ??= this.nodesByName();
        pick = this.pickApart(pod, nodes, freeOf);
        if ('node' in pick) {
          const node = this.store.node(pick.node);
          this.bind(pod, pick.node, node ? this.gpushareCard(pod, pick.node, freeOf(node)) : undefined);
        } else {
          this.tried.set(key, this.epoch);
          const c = pod.status?.conditions?.find((x) => x.type === 'PodScheduled') as { message?: string } | undefined;
          if (c?.message !== pick.reason)
            this.store.put('pods', { ...pod, status: pendingStatus(pod, 'Unschedulable', pick.reason) });
        }
        continue;
      }
      if (known && 'unfit' in known) pick = { reason: known.unfit };
      else if (known) {
        const fits = known.retry
          .map((n) => this.store.node(n))
          .find((n): n is Node => n !== undefined && unfitReason(pod, n, freeOf(n)) === undefined);
        pick = fits ? { node: fits.metadata.name, index: -1 } : { reason: known.reason };
      } else {
        nodes ??= this.nodesByName();
        const hint = this.hints.get(shape);
        const start = hint && hint.epoch === this.epoch && hint.list === this.nodeListVersion ? hint.index : 0;
        pick = pickNode(pod, nodes, freeOf, start);
      }
      if ('node' in pick) {
        if (this.hints.size > 10_000) this.clearHints();
        if (pick.index >= 0) this.hint(shape, pick.index, this.selectedBy.get(key) ?? []);
        const node = this.store.node(pick.node);
        this.bind(pod, pick.node, node ? this.gpushareCard(pod, pick.node, freeOf(node)) : undefined);
        continue;
      }
      this.unfit.unfit(shape, this.epoch, this.nodeListVersion, pick.reason, this.selectedBy.get(key) ?? []);
      this.unschedulable(key, pod, pick.reason);
      if (this.nominations.mayTry(pod))
        this.nominations.preempt(this.store.pod(ns, name) ?? pod, (nodes ??= this.nodesByName()));
    }
  }

  /** A pod that fits nowhere: tried at this epoch, its PodScheduled condition saying why. */
  private unschedulable(key: string, pod: Pod, reason: string): void {
    this.tried.set(key, this.epoch);
    const cond = pod.status?.conditions?.find((c) => c.type === 'PodScheduled') as { message?: string } | undefined;
    if (cond?.message !== reason)
      this.store.put('pods', { ...pod, status: pendingStatus(pod, 'Unschedulable', reason) });
  }

  /** One pod while nominations hold room: filtered with the nominated pods, no memo, then preemption. */
  private scheduleNominated(key: string, pod: Pod, nodes: NodeView[], freeOf: (n: Node) => Map<string, number>): void {
    const seen = this.nominations.freeFor(pod, freeOf);
    const pick = pickNode(pod, nodes, seen);
    if ('node' in pick) {
      const node = this.store.node(pick.node);
      this.bind(pod, pick.node, node ? this.gpushareCard(pod, pick.node, seen(node)) : undefined);
      return;
    }
    this.unschedulable(key, pod, pick.reason);
    const [ns, name] = key.split('/') as [string, string];
    if (this.nominations.mayTry(pod)) this.nominations.preempt(this.store.pod(ns, name) ?? pod, nodes);
  }

  /**
   * Pods with ResourceClaims (dra-controller.ts): the resourceclaim controller makes their template
   * claims, then each is tried over every node with DynamicResources after the other filters. Tried
   * again only when capacity, the DRA objects or the node list changed since.
   */
  private scheduleClaimed(): void {
    const stamp = () => `${this.epoch}/${this.draEpoch}/${this.nodeListVersion}`;
    const free = this.freeCache;
    const freeOf = (n: Node) => {
      const name = n.metadata.name;
      let f = free.get(name);
      if (!f) free.set(name, (f = freeOn(n, this.store.podsOnNode(name), unhealthyCardsOf(this.store, name))));
      return f;
    };
    for (const key of [...this.draPending]) {
      if (this.draTried.get(key) === stamp()) continue;
      const [ns, name] = key.split('/') as [string, string];
      let pod = this.store.pod(ns, name);
      if (!pod) continue;
      const made = this.dra.makeClaims(pod);
      pod = this.store.pod(ns, name)!;
      const tried = stamp();
      const pick =
        'reason' in made
          ? { reason: `0/${this.nodesByName().length} nodes are available: ${made.reason}.` }
          : this.dra.place(pod, this.nodesByName(), (v) => unfitReason(pod!, v.node, freeOf(v.node)));
      this.draTried.set(key, tried);
      if ('node' in pick) {
        this.bind(pod, pick.node);
        continue;
      }
      const c = pod.status?.conditions?.find((x) => x.type === 'PodScheduled') as { message?: string } | undefined;
      if (c?.message !== pick.reason)
        this.store.put('pods', {
          ...pod,
          status: keepClaimStatuses(pod, pendingStatus(pod, 'Unschedulable', pick.reason)),
        });
    }
  }

  /**
   * The first node in name order that passes the filter and the pods' hostname anti-affinity
   * (pod-anti-affinity.ts), or the scheduler's count of why none did.
   */
  private pickApart(
    pod: Pod,
    nodes: readonly NodeView[],
    freeOf: (n: Node) => Map<string, number>,
  ): { node: string; index: number } | { reason: string } {
    const reasons = new Map<string, number>();
    for (const [i, v] of nodes.entries()) {
      const why =
        unfitReason(pod, v.node, freeOf(v.node)) ??
        (antiAffinityAllows(pod, this.store.podsOnNode(v.name)) ? undefined : ANTI_AFFINITY_REASON);
      if (why === undefined) return { node: v.name, index: i };
      reasons.set(why, (reasons.get(why) ?? 0) + 1);
    }
    const parts = [...reasons.entries()].map(([r, n]) => `${n} ${r}`).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    return { reason: `0/${nodes.length} nodes are available: ${parts.join(', ')}.` };
  }

  /** The cluster gained room on `node`: pods that fitted nowhere and may use it are worth another try. */
  private bumpEpoch(node: string): void {
    this.epoch++;
    this.unfit.freed(this.epoch, node);
    const n = this.store.node(node);
    for (const [shape, keys] of this.byShape) {
      if (this.dirtyShapes.has(shape)) continue;
      const [ns, name] = (keys.values().next().value ?? '/').split('/') as [string, string];
      const pod = this.store.pod(ns, name);
      // A node the shape's selector or affinity rules out gains it nothing.
      if (!n || !pod || matchesNodeAffinity(pod, n)) this.dirtyShapes.add(shape);
    }
  }

  /** Pods of `shape` (selecting on node label `keys`) fit no node before `index` at this epoch. */
  private hint(shape: string, index: number, keys: readonly string[]): void {
    this.hints.set(shape, { epoch: this.epoch, list: this.nodeListVersion, index });
    for (const k of keys) {
      let s = this.hintsByKey.get(k);
      if (!s) this.hintsByKey.set(k, (s = new Set()));
      s.add(shape);
    }
  }

  private clearHints(): void {
    this.hints.clear();
    this.hintsByKey.clear();
  }

  /** Node labels `changed` without an epoch bump: hints of shapes selecting on them may skip a node that fits. */
  private forgetHintsSelecting(changed: readonly string[]): void {
    for (const k of changed) {
      const shapes = this.hintsByKey.get(k);
      if (!shapes) continue;
      this.hintsByKey.delete(k);
      for (const shape of shapes) this.hints.delete(shape);
    }
  }

  /** Files a waiting pod under its shape (or takes it out: `shape` undefined). */
  private fileShape(key: string, shape: string | undefined): void {
    const old = this.shapeOf.get(key);
    if (old === shape) return;
    if (old !== undefined) {
      const keys = this.byShape.get(old)!;
      keys.delete(key);
      if (keys.size === 0) this.byShape.delete(old);
    }
    if (shape === undefined) {
      this.shapeOf.delete(key);
      this.queued.delete(key);
      return;
    }
    this.shapeOf.set(key, shape);
    if (!this.queued.has(key)) this.queued.set(key, ++this.queueSeq);
    let keys = this.byShape.get(shape);
    if (!keys) this.byShape.set(shape, (keys = new Set()));
    keys.add(key);
    this.dirtyShapes.add(shape);
  }

  /** Every waiting pod is worth a try (the node list changed). */
  private allDirty(): void {
    for (const shape of this.byShape.keys()) this.dirtyShapes.add(shape);
  }

  private nodesByName(): NodeView[] {
    if (!this.sortedNodes) {
      this.sortedNodes = this.store
        .nodes()
        .sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1))
        .map(nodeView);
      this.nodeIndex = new Map(this.sortedNodes.map((v, i) => [v.name, i]));
    }
    return this.sortedNodes;
  }

  private markDaemonNode(node: string): void {
    if (this.daemonNodes !== 'all') this.daemonNodes.add(node);
  }

  /** One pod per DaemonSet per eligible node that lacks one (nodes marked since the last run). */
  private runDaemonSets(): void {
    const which = this.daemonNodes;
    this.daemonNodes = new Set();
    const nodes =
      which === 'all'
        ? this.store.nodes()
        : [...which].map((n) => this.store.node(n)).filter((n): n is Node => n !== undefined);
    for (const ds of this.store.list('daemonsets.apps')) {
      const ns = ds.metadata.namespace ?? '';
      for (const node of nodes) {
        // A pod whose node no longer matches the DaemonSet's node selector or affinity is deleted (gracefully):
        // `shouldContinueRunning` is false (pkg/controller/daemon/daemon_controller.go nodeShouldRunDaemonPod).
        // A NoSchedule taint does not count there; only NoExecute does, which the taint manager handles.
        if (!selects(ds, node))
          for (const p of this.store.podsOnNode(node.metadata.name))
            if (controllerOf(p)?.uid === ds.metadata.uid && !p.metadata.deletionTimestamp) this.deletePod(p);
        if (!eligible(ds, node) || hasDaemonPod(ds, this.store.podsOnNode(node.metadata.name))) continue;
        const name = this.generateName(`${ds.metadata.name}-`, (n) => this.store.pod(ns, n) !== undefined);
        try {
          this.store.put('pods', this.admit(daemonPod(ds, node.metadata.name, name)));
        } catch (err) {
          this.failures.push(`DaemonSet ${ns}/${ds.metadata.name}: ${(err as Error).message}`);
        }
      }
    }
  }

  /** Whether a waiting pod selects on this node label key (nodeSelector, required node affinity). */
  private selectedLabelKey(key: string): boolean {
    return (this.selectedCount.get(key) ?? 0) > 0;
  }

  /** Replaces what the pod at `key` contributes to the selected label keys (none once it stops waiting). */
  private trackSelected(key: string, spec: PodSpec | undefined): void {
    for (const k of this.selectedBy.get(key) ?? []) {
      const n = (this.selectedCount.get(k) ?? 0) - 1;
      if (n > 0) this.selectedCount.set(k, n);
      else this.selectedCount.delete(k);
    }
    this.selectedBy.delete(key);
    if (!spec) return;
    const keys = new Set<string>(Object.keys(spec.nodeSelector ?? {}));
    for (const t of spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms ??
      [])
      for (const e of t.matchExpressions ?? []) keys.add(e.key);
    if (keys.size === 0) return;
    this.selectedBy.set(key, [...keys]);
    for (const k of keys) this.selectedCount.set(k, (this.selectedCount.get(k) ?? 0) + 1);
  }

  /** Keeps the pending set, the capacity epoch and the node order in step with the store. */
  private observe(e: StoreEvent): void {
    if (e.resource === 'pods') {
      const pod = e.object as Pod;
      const key = `${pod.metadata.namespace}/${pod.metadata.name}`;
      // Only pods asking for the default scheduler are ours; others wait for their own binder.
      const ours = (pod.spec.schedulerName ?? 'default-scheduler') === 'default-scheduler';
      const unbound =
        e.type !== 'DELETED' &&
        ours &&
        !pod.spec.nodeName &&
        !pod.metadata.deletionTimestamp &&
        pod.status?.phase === 'Pending';
      // A gated pod waits outside the queue until its last gate is removed (scheduler.ts).
      const gated = unbound && schedulingGated(pod);
      const waiting = unbound && !gated;
      if (gated && scheduledReason(pod) !== SCHEDULING_GATED) this.gatedToMark.add(key);
      const annotation = pod.metadata.annotations?.[COMPLETE_AFTER];
      const seconds = annotation === undefined || annotation === '' ? Number.NaN : Number(annotation);
      if (e.type === 'DELETED' || pod.status?.phase !== 'Running') this.completing.delete(key);
      else if (seconds >= 0 && !this.completing.has(key)) {
        const due = this.clock.now() + seconds * 1000;
        this.completing.set(key, due);
        this.dueAt = Math.min(this.dueAt, due);
      }
      const owner = controllerOf(pod);
      const kicked = owner
        ? this.retries.kick(`${owner.kind} ${pod.metadata.namespace}/${owner.name}`, this.clock.now())
        : undefined;
      if (kicked !== undefined) this.dueAt = Math.min(this.dueAt, kicked);
      if (e.type !== 'DELETED' && hasHostnameAntiAffinity(pod)) this.antiAffine.add(key);
      else this.antiAffine.delete(key);
      // Pods with ResourceClaims take the DRA path (scheduleClaimed), not the shape memo: whether
      // they fit depends on claims and devices, not on their requests alone.
      const claimed = hasClaims(pod);
      if (claimed && waiting) this.draPending.add(key);
      else this.draPending.delete(key);
      if (!waiting) this.draTried.delete(key);
      if (claimed && (e.type === 'DELETED' || isTerminal(pod))) this.draReleased.set(key, pod);
      const shaped = waiting && !claimed;
      const heldFor = this.nominations.observe(key, pod, shaped);
      if (heldFor !== undefined) this.bumpEpoch(heldFor);
      if (shaped || this.pending.has(key)) this.trackSelected(key, shaped ? pod.spec : undefined);
      this.fileShape(key, shaped ? shapeOf(pod) : undefined);
      if (shaped) this.priorities.set(key, priorityOf(pod));
      else this.priorities.delete(key);
      if (shaped && !this.pending.has(key)) this.dirtyShapes.add(this.shapeOf.get(key)!);
      if (shaped) this.pending.add(key);
      else {
        this.pending.delete(key);
        this.tried.delete(key);
      }
      const before = e.previous as Pod | undefined;
      if (before?.spec.nodeName) this.freeCache.delete(before.spec.nodeName);
      if (pod.spec.nodeName) this.freeCache.delete(pod.spec.nodeName);
      const freed = before !== undefined && holdsResources(before) && (e.type === 'DELETED' || !holdsResources(pod));
      if (freed) this.bumpEpoch(before.spec.nodeName ?? '');
    } else if ([CLAIMS, CLAIM_TEMPLATES, DEVICE_CLASSES, SLICES, TAINT_RULES].includes(e.resource)) {
      // A claim freed or allocated, a device published, tainted or untainted: DRA pods may fit now.
      this.draEpoch++;
    } else if (
      e.resource === 'configmaps' &&
      e.object.metadata.namespace === 'kube-system' &&
      e.object.metadata.name.startsWith(UNHEALTHY_GPU_PREFIX)
    ) {
      // ACK's gpushare extender reads the node's unhealthy cards at each fit (gpushare.ts): a card
      // that came back is room gained.
      const node = e.object.metadata.name.slice(UNHEALTHY_GPU_PREFIX.length);
      this.freeCache.delete(node);
      this.bumpEpoch(node);
    } else if (e.resource === 'nodes') {
      const node = e.object as Node;
      this.freeCache.delete(node.metadata.name);
      // A changed node keeps its place in name order; only a node joining or leaving re-sorts.
      const at = this.nodeIndex.get(node.metadata.name);
      if (e.type === 'MODIFIED' && this.sortedNodes && at !== undefined) this.sortedNodes[at] = nodeView(node);
      else this.sortedNodes = undefined;
      if (e.type !== 'MODIFIED') {
        this.nodeListVersion++;
        this.allDirty();
        this.clearHints();
      }
      if (
        e.type === 'ADDED' ||
        (e.type === 'MODIFIED' && loosened(e.previous as Node, node, (k) => this.selectedLabelKey(k)))
      )
        this.bumpEpoch(node.metadata.name);
      // Labels no waiting pod selects on: a shape remembered as fitting nowhere may fit there now.
      else if (e.type === 'MODIFIED') {
        const changed = changedLabels(e.previous as Node, node);
        this.unfit.forgetSelecting(changed);
        this.forgetHintsSelecting(changed);
      }
      if (e.type !== 'DELETED' && node.spec?.taints?.some((t) => t.effect === 'NoExecute'))
        this.noExecuteCheck.add(node.metadata.name);
      // The DaemonSet controller also looks again at a node whose labels changed (its `updateNode`
      // handler, kubernetes pkg/controller/daemon/daemon_controller.go): a label a DaemonSet's
      // nodeSelector names (NVIDIA's `nvidia.com/mps.capable`) brings its pod there.
      if (e.type === 'ADDED' || (e.type === 'MODIFIED' && changedLabels(e.previous as Node, node).length > 0))
        this.markDaemonNode(node.metadata.name);
    }
  }
}

/**
 * True when a node change could let a pod fit that did not before. A label change counts only when
 * a waiting pod selects on one of the changed keys (as kube-scheduler's queueing hints): a
 * controller that labels the nodes it cordons must not send every pending pod back over the fleet.
 */
function loosened(before: Node, after: Node, selected: (key: string) => boolean): boolean {
  if (before.spec?.unschedulable && !after.spec?.unschedulable) return true;
  const key = (t: Taint) => `${t.key}=${t.value ?? ''}:${t.effect}`;
  const now = new Set((after.spec?.taints ?? []).map(key));
  if ((before.spec?.taints ?? []).some((t) => !now.has(key(t)))) return true;
  const a = before.metadata.labels ?? {};
  const b = after.metadata.labels ?? {};
  const changed = [...new Set([...Object.keys(a), ...Object.keys(b)])].filter((k) => a[k] !== b[k]);
  if (changed.some(selected)) return true;
  return JSON.stringify(before.status?.allocatable) !== JSON.stringify(after.status?.allocatable);
}

/** The node label keys whose values differ between `before` and `after`. */
function changedLabels(before: Node, after: Node): string[] {
  const a = before.metadata.labels ?? {};
  const b = after.metadata.labels ?? {};
  return [...new Set([...Object.keys(a), ...Object.keys(b)])].filter((k) => a[k] !== b[k]);
}

/** What decides where a pod can go: two pods of one shape fit the same nodes. */
function shapeOf(pod: Pod): string {
  return JSON.stringify([
    [...podRequests(pod)],
    pod.spec.tolerations,
    pod.spec.nodeSelector,
    pod.spec.affinity?.nodeAffinity,
  ]);
}
