import type { Store } from './kube/index.ts';
import type { StoreEvent } from './kube/store.ts';
import type { KubeObject, Node, Pod } from './kube/types.ts';
import { cardOfPod, UNHEALTHY_GPU_PREFIX } from './kube/gpushare.ts';
import { allocatedDevices, CLAIMS, hasClaims, TAINT_RULES, type Claim } from './kube/dra-allocator.ts';
import type { TimelineEntry } from './timeline.ts';

/**
 * Turns the simulated cluster's stored changes into timeline entries: a node cordoned, tainted or
 * relabelled, a pod terminating, a replacement pod scheduled (a "reschedule" when its controller
 * lost a pod earlier), pods pending on a GPU resource. It reads the store's change feed — what the
 * API server actually stored — so it reports exactly what clients did, whoever they were.
 */
const GPU_RESOURCE = /^(nvidia\.com\/|aliyun\.com\/gpu)/;

export interface ClusterCounters {
  evicted: string[];
  rescheduled: { pod: string; node: string; replaces: string }[];
}

const key = (p: Pod) => `${p.metadata.namespace}/${p.metadata.name}`;
const ownerUid = (p: Pod) => p.metadata.ownerReferences?.find((o) => o.controller)?.uid;
const taintKeys = (n: Node) => (n.spec?.taints ?? []).map((t) => `${t.key}${t.value ? `=${t.value}` : ''}:${t.effect}`);

export function gpuResourcesOf(p: Pod): string[] {
  const out = new Set<string>();
  for (const c of p.spec.containers ?? [])
    for (const k of Object.keys({ ...c.resources?.requests, ...c.resources?.limits }))
      if (GPU_RESOURCE.test(k)) out.add(k);
  return [...out];
}

export class ClusterObserver {
  readonly counters: ClusterCounters = { evicted: [], rescheduled: [] };
  /** Controller UID → pods it lost that have not been replaced on a node yet. */
  private readonly lost = new Map<string, string[]>();
  private readonly unsubscribe: () => void;

  constructor(
    store: Store,
    private readonly emit: (e: Omit<TimelineEntry, 'atMs'>) => void,
  ) {
    this.unsubscribe = store.subscribe((e) => this.observe(e));
  }

  private observe(e: StoreEvent): void {
    if (e.resource === 'nodes' && e.type === 'MODIFIED' && e.previous) this.node(e.object as Node, e.previous as Node);
    if (e.resource === 'pods') this.pod(e);
    if (e.resource === 'configmaps' && e.object.metadata.namespace === 'kube-system') this.cards(e);
    if (e.resource === TAINT_RULES && e.type !== 'MODIFIED') this.deviceTaint(e);
    if (e.resource === CLAIMS) this.claim(e);
  }

  /** A DeviceTaintRule created or deleted: which device it taints, with what (DRA: the scheduler's view). */
  private deviceTaint(e: StoreEvent): void {
    const spec = e.object.spec as {
      deviceSelector?: { driver?: string; pool?: string; device?: string };
      taint?: { key?: string; value?: string; effect?: string };
    };
    const sel = spec?.deviceSelector ?? {};
    const device = [sel.driver ?? '*', sel.pool ?? '*', sel.device ?? '*'].join('/');
    const t = spec?.taint ?? {};
    const taint = `${t.key}${t.value ? `=${t.value}` : ''}:${t.effect}`;
    const done = e.type === 'DELETED' ? 'untainted' : 'tainted';
    this.emit({
      who: 'cluster',
      kind: 'cluster',
      what: '',
      text: `device ${device} ${done} ${taint} (DeviceTaintRule ${e.object.metadata.name})`,
    });
  }

  /** A claim allocated or deallocated by the scheduler / resourceclaim controller. */
  private claim(e: StoreEvent): void {
    const now = allocatedDevices(e.type === 'DELETED' ? undefined : (e.object as Claim));
    const was = allocatedDevices(e.previous as Claim | undefined);
    const name = `${e.object.metadata.namespace}/${e.object.metadata.name}`;
    const list = (r: typeof now) => r.map((d) => `${d.driver}/${d.pool}/${d.device}`).join(', ');
    if (now.length > 0 && was.length === 0)
      this.emit({ who: 'cluster', kind: 'cluster', what: '', text: `claim ${name} allocated ${list(now)}` });
    if (now.length === 0 && was.length > 0) {
      const how = e.type === 'DELETED' ? 'deleted (its pod is gone), freeing' : 'deallocated';
      this.emit({ who: 'cluster', kind: 'cluster', what: '', text: `claim ${name} ${how} ${list(was)}` });
    }
  }

  /** ACK gpushare's unhealthy cards of a node (kube/gpushare.ts): what its extender skips. */
  private cards(e: StoreEvent): void {
    const name = e.object.metadata.name;
    if (!name.startsWith(UNHEALTHY_GPU_PREFIX)) return;
    const gpus = (o: KubeObject | undefined) => (o as { data?: Record<string, string> } | undefined)?.data?.gpus;
    const was = e.type === 'ADDED' ? undefined : gpus(e.previous);
    const now = e.type === 'DELETED' ? undefined : gpus(e.object);
    if (was === now) return;
    const change = `${JSON.stringify(was ?? '')} → ${JSON.stringify(now ?? '')}`;
    const text = `configmap kube-system/${name} gpus ${change} (gpushare extender)`;
    this.emit({ who: 'cluster', kind: 'cluster', what: '', text });
  }

  private node(n: Node, prev: Node): void {
    const name = n.metadata.name;
    if (!!n.spec?.unschedulable !== !!prev.spec?.unschedulable)
      this.emit({
        who: 'cluster',
        kind: 'cluster',
        what: '',
        text: `node ${name} ${n.spec?.unschedulable ? 'cordoned' : 'uncordoned'}`,
      });
    const before = new Set(taintKeys(prev));
    const after = new Set(taintKeys(n));
    for (const t of after)
      if (!before.has(t)) this.emit({ who: 'cluster', kind: 'cluster', what: '', text: `node ${name} tainted ${t}` });
    for (const t of before)
      if (!after.has(t)) this.emit({ who: 'cluster', kind: 'cluster', what: '', text: `node ${name} untainted ${t}` });
    const labels = n.metadata.labels ?? {};
    const old = prev.metadata.labels ?? {};
    // One line per node update, however many of our labels it set: a first labelling sets six.
    const set = Object.entries(labels).filter(([k, v]) => k.startsWith('gpu-reflex.io/') && old[k] !== v);
    if (set.length > 0)
      this.emit({
        who: 'cluster',
        kind: 'cluster',
        what: '',
        text: `node ${name} labelled ${set.map(([k, v]) => `${k}=${v}`).join(', ')}`,
      });
    // GPU devices the device plugin reports (a fenced GPU leaving, returning): what the scheduler counts.
    const alloc = (n.status?.allocatable ?? {}) as Record<string, string>;
    const was = (prev.status?.allocatable ?? {}) as Record<string, string>;
    for (const k of Object.keys({ ...was, ...alloc })) {
      if (!(k === 'nvidia.com/gpu' || k.startsWith('nvidia.com/mig-')) || alloc[k] === was[k]) continue;
      this.emit({
        who: 'cluster',
        kind: 'cluster',
        what: '',
        text: `node ${name} allocatable ${k} ${was[k] ?? 0} → ${alloc[k] ?? 0} (device plugin)`,
      });
    }
  }

  private pod(e: StoreEvent): void {
    const p = e.object as Pod;
    const prev = e.previous as Pod | undefined;
    if (p.metadata.ownerReferences?.some((o) => o.kind === 'DaemonSet')) return;
    if (e.type === 'MODIFIED' && p.metadata.deletionTimestamp && !prev?.metadata.deletionTimestamp) {
      this.counters.evicted.push(key(p));
      const owner = ownerUid(p);
      if (owner) this.lost.set(owner, [...(this.lost.get(owner) ?? []), key(p)]);
      this.emit({
        who: 'cluster',
        kind: 'cluster',
        what: '',
        text:
          `pod ${key(p)} terminating on ${p.spec.nodeName ?? '(no node)'} ` +
          `(grace ${p.metadata.deletionGracePeriodSeconds ?? 0}s)`,
      });
      return;
    }
    const boundNow = p.spec.nodeName && (!prev || !prev.spec.nodeName) && e.type !== 'DELETED';
    if (!boundNow) return;
    const owner = ownerUid(p);
    const waiting = owner ? this.lost.get(owner) : undefined;
    const card = cardOfPod(p);
    const on = `${p.spec.nodeName}${card === undefined ? '' : ` card ${card}`}`;
    if (waiting && waiting.length > 0) {
      const replaces = waiting.shift()!;
      this.counters.rescheduled.push({ pod: key(p), node: p.spec.nodeName!, replaces });
      this.emit({
        who: 'cluster',
        kind: 'cluster',
        what: '',
        text: `pod ${key(p)} rescheduled on ${on} (replaces ${replaces})`,
      });
    } else if (gpuResourcesOf(p).length > 0 || hasClaims(p)) {
      this.emit({ who: 'cluster', kind: 'cluster', what: '', text: `pod ${key(p)} scheduled on ${on}` });
    }
  }

  close(): void {
    this.unsubscribe();
  }
}

/** Pending (unbound, not terminating) pods per GPU resource they ask for. */
export function pendingByResource(pods: readonly Pod[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const p of pods) {
    if (
      p.spec.nodeName ||
      p.metadata.deletionTimestamp ||
      p.status?.phase === 'Succeeded' ||
      p.status?.phase === 'Failed'
    )
      continue;
    for (const r of gpuResourcesOf(p)) out[r] = (out[r] ?? 0) + 1;
  }
  return out;
}
