import type { Store, StoreEvent } from './store.ts';
import type { KubeObject, Pod } from './types.ts';

/**
 * The Events each simulated node's kubelet records about what kubectl (or anyone) does to its node
 * and pods, so `kubectl get events` and `describe` show a cordon and a drain as on a real cluster:
 *
 *  - `NodeNotSchedulable` / `NodeSchedulable` (Normal, from kubelet, on the Node, in `default`:
 *    "Node <name> status is now: NodeNotSchedulable"): pkg/kubelet/kubelet_node_status.go
 *    recordNodeSchedulableEvent, one of the node status setters, so it is recorded at the kubelet's
 *    next status sync (every nodeStatusUpdateFrequency, 10 s by default:
 *    https://kubernetes.io/docs/reference/config-api/kubelet-config.v1beta1/), not at the cordon, and
 *    only when spec.unschedulable differs from what it last recorded (a cordon undone before the sync
 *    records nothing). The kubelet's node reference carries the node's name as its UID.
 *  - `Killing` (Normal, from kubelet, on the pod with fieldPath `spec.containers{<name>}`: "Stopping
 *    container <name>"): pkg/kubelet/kuberuntime/kuberuntime_container.go killContainer, once per
 *    running container as soon as the pod is deleted (an eviction is a deletion), before its grace
 *    period runs.
 *
 * Event names follow client-go's recorder (tools/record/event.go: `<object name>.<unix nanos, hex>`).
 * kubectl itself records nothing for cordon or drain: these are what a real cluster shows for them.
 */
export const KUBELET_STATUS_SECONDS = 10;

export class KubeletEvents {
  /** What each node's kubelet last recorded about spec.unschedulable. */
  private readonly recorded = new Map<string, boolean>();
  /** Nodes whose spec.unschedulable changed since their kubelet's last status sync → that sync's time. */
  private readonly changed = new Map<string, number>();
  /** Killing events to record at the next settle (never written from inside a store callback). */
  private readonly killing: { pod: Pod; node: string }[] = [];
  private seq = 0;

  constructor(
    private readonly store: Store,
    private readonly now: () => number,
    private readonly uid: () => string,
    private readonly statusMs = KUBELET_STATUS_SECONDS * 1000,
  ) {
    store.subscribe((e) => this.observe(e));
  }

  private observe(e: StoreEvent): void {
    if (e.resource === 'nodes') {
      const name = e.object.metadata.name;
      const now = (e.object as { spec?: { unschedulable?: boolean } }).spec?.unschedulable === true;
      if (e.type === 'DELETED') {
        this.recorded.delete(name);
        this.changed.delete(name);
      } else if (!this.recorded.has(name)) this.recorded.set(name, now);
      else if (this.recorded.get(name) !== now && !this.changed.has(name))
        this.changed.set(name, this.nextSync(e.object, this.now()));
      return;
    }
    if (e.resource !== 'pods') return;
    const pod = e.object as Pod;
    const before = e.previous as Pod | undefined;
    const node = pod.spec.nodeName;
    if (!node || (before ?? pod).status?.phase !== 'Running') return;
    // Deletion starts (deletionTimestamp set), or a pod removed at once without one (grace 0).
    const starts = e.type === 'MODIFIED' && pod.metadata.deletionTimestamp && !before?.metadata.deletionTimestamp;
    const removed = e.type === 'DELETED' && !before?.metadata.deletionTimestamp;
    if (starts || removed) this.killing.push({ pod: before ?? pod, node });
  }

  /** Records what came due: Killing at once, the schedulable change at each kubelet's next status sync. */
  settle(now: number): void {
    for (const { pod, node } of this.killing.splice(0)) {
      // A node that is gone took its kubelet with it; a namespace that is gone took its Events.
      if (!this.store.node(node) || !this.store.get('namespaces', '', pod.metadata.namespace ?? '')) continue;
      for (const c of pod.spec.containers ?? [])
        this.record(
          now,
          node,
          pod.metadata.namespace ?? 'default',
          {
            kind: 'Pod',
            namespace: pod.metadata.namespace,
            name: pod.metadata.name,
            uid: pod.metadata.uid,
            apiVersion: 'v1',
            fieldPath: `spec.containers{${c.name}}`,
          },
          'Killing',
          `Stopping container ${c.name}`,
        );
    }
    for (const [name, due] of [...this.changed]) {
      const node = this.store.node(name);
      if (due > now || !node) continue;
      this.changed.delete(name);
      const unschedulable = node.spec?.unschedulable === true;
      if (this.recorded.get(name) === unschedulable) continue;
      this.recorded.set(name, unschedulable);
      const reason = unschedulable ? 'NodeNotSchedulable' : 'NodeSchedulable';
      this.record(
        now,
        name,
        'default',
        { kind: 'Node', name, uid: name },
        reason,
        `Node ${name} status is now: ${reason}`,
      );
    }
  }

  /**
   * The kubelet's status loop ticks every statusMs from when its node registered: the first tick
   * after `seen` (a change seen exactly on a tick waits for the next one).
   */
  private nextSync(node: KubeObject, seen: number): number {
    const born = Date.parse(node.metadata.creationTimestamp ?? '') || 0;
    return born + (Math.floor((seen - born) / this.statusMs) + 1) * this.statusMs;
  }

  private record(now: number, host: string, namespace: string, involved: object, reason: string, message: string) {
    const at = new Date(now).toISOString().replace(/\.\d{3}Z$/, 'Z');
    const name = (involved as { name: string }).name;
    const nanos = BigInt(now) * 1_000_000n + BigInt(this.seq++ % 1_000_000);
    this.store.put('events', {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: `${name}.${nanos.toString(16)}`, namespace, uid: this.uid(), creationTimestamp: at },
      involvedObject: involved,
      reason,
      message,
      source: { component: 'kubelet', host },
      firstTimestamp: at,
      lastTimestamp: at,
      count: 1,
      type: 'Normal',
      eventTime: null,
      reportingComponent: 'kubelet',
      reportingInstance: host,
    } as unknown as KubeObject);
  }
}
