import { admitPod, defaultNode, invalidField, NODE_LEASE_NAMESPACE, nodeLease } from './admission.ts';
import { withTimeAdded } from './dra-devices.ts';
import { withDaemonSetStatus } from './daemonsets.ts';
import { errors, type StatusBody } from './errors.ts';
import { Lifecycle } from './lifecycle.ts';
import { MigManager, type MigLayouts } from './mig-manager.ts';
import { applyMergePatch, applyPatch, PATCH_TYPES, PatchError, PatchTooLarge } from './patch.ts';
import { withPdbStatus } from './pdb.ts';
import { checkDeletePreconditions } from './preconditions.ts';
import type { AuditRecord } from './audit.ts';
import { bindPod, evictPod } from './pod-subresources.ts';
import { normalizeQuantities } from './normalize.ts';
import { withQuotaStatus } from './quota.ts';
import { ServedApis, type ApiSettings } from './api-versions.ts';
import { selectPage, type ListOptions, type ListResult } from './cluster-list.ts';
import { apiVersionOf, qualifiedName, resource, type ResourceDef } from './resources.ts';
import { requirementsOf } from './selectors.ts';
import { Store } from './store.ts';
import { mergeUpdate, same, type UpdateVerb, type WriteOptions } from './update-merge.ts';
import { checkObject } from './validation.ts';
import type { Clock, KubeObject, LabelSelectorSpec, Node, Pod } from './types.ts';

export type { ListOptions, ListResult } from './cluster-list.ts';
export type { WriteOptions } from './update-merge.ts';

const PODS = resource('pods');
const NAMESPACES = resource('namespaces');

const clone = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;

/**
 * The API server's behaviour, independent of HTTP: CRUD with resourceVersion preconditions,
 * patches, admission (limit ranges, quota), eviction against budgets, binding. Every write
 * ends by letting the lifecycle (scheduler, terminations, controllers) catch up synchronously,
 * so a client sees a settled cluster after each call. Lists, updates' merge rules, preconditions and the
 * pod subresources live in cluster-list.ts, update-merge.ts, preconditions.ts and pod-subresources.ts.
 */
export class Cluster {
  readonly store = new Store();
  readonly lifecycle: Lifecycle;
  /**
   * Who changed what, as kube-apiserver's audit log records it (audit.k8s.io Event: user.username,
   * verb, objectRef): the authorized writes that came over HTTP, at least the last AUDIT_KEPT of them.
   */
  readonly audit: AuditRecord[] = [];
  /**
   * The reads (get, list, watch) each impersonated user made, one entry per distinct verb, resource and
   * namespace (`user verb resource[/sub] namespace`): what the audit log's read events would show, kept small.
   */
  readonly reads = new Set<string>();
  /** The Kubernetes release this server is: `/version`, and which DRA API versions it serves. */
  readonly apis: ServedApis;
  private uidSeq = 0;

  constructor(
    readonly clock: Clock,
    options: {
      migLayouts?: MigLayouts;
      migReconfigureSeconds?: number;
      migManagerConfig?: string;
      /** Seconds after mig-manager's `success` until the Node's MIG allocatable shows the new layout. */
      migAllocatableLagSeconds?: number;
      apis?: ApiSettings;
      /** How often each kubelet syncs its node status (its schedulable Events come then); default 10 s. */
      kubeletStatusSeconds?: number;
    } = {},
  ) {
    this.apis = new ServedApis(options.apis);
    this.lifecycle = new Lifecycle(
      this.store,
      clock,
      new MigManager(
        options.migLayouts ?? {},
        options.migReconfigureSeconds ?? 30,
        options.migManagerConfig,
        options.migAllocatableLagSeconds,
      ),
      options.kubeletStatusSeconds,
    );
    this.lifecycle.uid = () => this.uid();
    // Controllers create pods through the same admission as clients (quota can refuse them).
    this.lifecycle.admit = (pod) => this.prepareCreate(PODS, pod.metadata.namespace ?? '', pod) as Pod;
  }

  nowIso(): string {
    return new Date(this.clock.now()).toISOString().replace(/\.\d{3}Z$/, 'Z');
  }

  /** Deterministic UIDs in UUID shape, so runs with the same inputs produce the same objects. */
  uid(): string {
    const hex = (++this.uidSeq).toString(16).padStart(12, '0');
    return `00000000-0000-4000-8000-${hex}`;
  }

  /** Processes what is due on the clock (pod terminations) and schedules. */
  tick(): void {
    this.lifecycle.settle();
  }

  // ------------------------------------------------------------------ reads
  get(r: ResourceDef, ns: string, name: string): KubeObject {
    const obj = this.store.get(qualifiedName(r), r.namespaced ? ns : '', name);
    if (!obj) throw errors.notFound(r, name);
    return this.present(r, obj);
  }

  /** Adds what controllers would keep in status: quota usage, PDB and DaemonSet counts. */
  present(r: ResourceDef, obj: KubeObject): KubeObject {
    const ns = obj.metadata.namespace ?? '';
    if (r.plural === 'resourcequotas') return withQuotaStatus(obj, this.store.pods(ns));
    if (r.plural === 'poddisruptionbudgets') return withPdbStatus(obj, this.podsSelectedBy(obj), this.nowIso());
    if (r.plural === 'daemonsets') return withDaemonSetStatus(obj, this.store.pods(ns));
    return obj;
  }

  /** The pods of a budget's namespace its selector picks, from the label index (pdb.ts filters again). */
  podsSelectedBy(pdb: KubeObject): Pod[] {
    const ns = pdb.metadata.namespace ?? '';
    try {
      return this.store.select('pods', {
        namespace: ns,
        labels: requirementsOf((pdb.spec as { selector?: LabelSelectorSpec } | undefined)?.selector),
      }) as Pod[];
    } catch {
      // An operator the selector parser refuses: let pdb.ts see every pod and decide as before.
      return this.store.pods(ns);
    }
  }

  list(r: ResourceDef, ns: string | undefined, opts: ListOptions = {}): ListResult {
    const result = selectPage(this.store, r, ns, opts);
    result.items = result.items.map((o) => this.present(r, o));
    return result;
  }

  // ------------------------------------------------------------------ writes
  create(r: ResourceDef, ns: string, body: unknown, opts: WriteOptions = {}): KubeObject {
    const obj = this.prepareCreate(r, ns, body);
    if (opts.dryRun) return obj;
    const stored = this.store.put(qualifiedName(r), obj);
    if (r.plural === 'nodes') this.putNodeLease(stored);
    this.lifecycle.created(r, stored);
    this.lifecycle.settle();
    return this.present(r, this.store.get(qualifiedName(r), obj.metadata.namespace ?? '', obj.metadata.name) ?? stored);
  }

  /**
   * Each node's kubelet holds a Lease in kube-node-lease (when that namespace exists, as it always does when seeded).
   */
  private putNodeLease(node: KubeObject): void {
    if (
      !this.store.get('namespaces', '', NODE_LEASE_NAMESPACE) ||
      this.store.get('leases.coordination.k8s.io', NODE_LEASE_NAMESPACE, node.metadata.name)
    )
      return;
    this.store.put(
      'leases.coordination.k8s.io',
      nodeLease(node, this.uid(), new Date(this.clock.now()).toISOString().replace('Z', '000Z')),
    );
  }

  private prepareCreate(r: ResourceDef, ns: string, body: unknown): KubeObject {
    if (typeof body !== 'object' || body === null || Array.isArray(body))
      throw errors.badRequest('the body of the request must be an object');
    const input = clone(body) as KubeObject;
    checkObject(r, { ...input, apiVersion: apiVersionOf(r), kind: r.kind } as KubeObject, 'create');
    const meta = { ...(input.metadata ?? {}) };
    if (r.namespaced) {
      if (meta.namespace && meta.namespace !== ns)
        throw errors.badRequest(
          'the namespace of the provided object does not match the namespace sent on the request',
        );
      meta.namespace = ns;
      if (!this.store.get('namespaces', '', ns)) throw errors.notFound(NAMESPACES, ns);
    } else delete meta.namespace;
    if (!meta.name) {
      if (!meta.generateName)
        throw errors.invalid(r, '', 'metadata.name', 'Required value: name or generateName is required');
      meta.name = this.lifecycle.generateName(
        meta.generateName,
        (n) => this.store.get(qualifiedName(r), meta.namespace ?? '', n) !== undefined,
      );
    }
    if (this.store.get(qualifiedName(r), meta.namespace ?? '', meta.name)) throw errors.alreadyExists(r, meta.name);
    delete meta.deletionTimestamp;
    delete meta.deletionGracePeriodSeconds;
    let obj: KubeObject = {
      ...input,
      apiVersion: apiVersionOf(r),
      kind: r.kind,
      metadata: {
        ...meta,
        uid: this.uid(),
        resourceVersion: '',
        creationTimestamp: this.nowIso(),
        ...(input.spec !== undefined ? { generation: 1 } : {}),
      },
    };
    const bad = normalizeQuantities(obj);
    if (bad) throw errors.invalid(r, meta.name, bad, 'Invalid value: must be a quantity such as 500m, 16Gi or 8');
    const wrong = invalidField(obj);
    if (wrong) throw errors.invalid(r, meta.name, ...wrong);
    if (r.plural === 'pods') obj = admitPod(obj as Pod, this.store, (p, node) => this.lifecycle.running(p, node));
    if (r.plural === 'nodes') obj = defaultNode(obj as Node, this.nowIso(), this.apis.gitVersion());
    if (r.plural === 'namespaces') {
      obj.metadata.labels = { ...obj.metadata.labels, 'kubernetes.io/metadata.name': obj.metadata.name };
      obj.spec = { finalizers: ['kubernetes'] };
      obj.status = { phase: 'Active' };
    }
    if (r.plural === 'devicetaintrules') obj = withTimeAdded(obj, this.nowIso());
    return obj;
  }

  replace(r: ResourceDef, ns: string, name: string, body: unknown, opts: WriteOptions = {}): KubeObject {
    const current = this.store.get(qualifiedName(r), r.namespaced ? ns : '', name);
    if (!current) throw errors.notFound(r, name);
    if (typeof body !== 'object' || body === null) throw errors.badRequest('the body of the request must be an object');
    const next = body as KubeObject;
    if (next.metadata?.name !== undefined && next.metadata.name !== name)
      throw errors.badRequest(
        `the name of the object (${next.metadata.name}) does not match the name on the URL (${name})`,
      );
    return this.commitUpdate(r, current, clone(next), opts, 'update');
  }

  patch(
    r: ResourceDef,
    ns: string,
    name: string,
    contentType: string,
    body: unknown,
    opts: WriteOptions & { fieldManager?: string } = {},
  ): KubeObject {
    const type = contentType.split(';')[0]!.trim();
    const current = this.store.get(qualifiedName(r), r.namespaced ? ns : '', name);
    if (type === PATCH_TYPES.apply) {
      if (!opts.fieldManager) throw errors.invalidOptions('fieldManager: Required value: is required for apply patch');
      // Server-side apply without managed fields: create when absent, else merge the intent.
      if (!current) return this.create(r, ns, body, opts);
      return this.commitUpdate(r, current, applyMergePatch(current, body) as KubeObject, opts, 'patch');
    }
    if (!current) throw errors.notFound(r, name);
    if (!Object.values(PATCH_TYPES).includes(type as never)) throw errors.unsupportedMediaType(type);
    let next: KubeObject;
    try {
      next = applyPatch(type, current, body) as KubeObject;
    } catch (err) {
      if (err instanceof PatchError) throw errors.invalid(r, name, 'patch', err.message);
      if (err instanceof PatchTooLarge) throw errors.tooLarge(err.message);
      throw err;
    }
    return this.commitUpdate(r, current, next, opts, 'patch');
  }

  /** Shared end of PUT and PATCH: preconditions, immutable fields, status ownership, no-op detection. */
  private commitUpdate(
    r: ResourceDef,
    current: KubeObject,
    next: KubeObject,
    opts: WriteOptions,
    verb: UpdateVerb,
  ): KubeObject {
    const name = current.metadata.name;
    const merged = mergeUpdate(r, current, next, opts, verb);
    if (same(merged, current) || opts.dryRun) return this.present(r, opts.dryRun ? merged : current);
    const stored = this.store.put(qualifiedName(r), merged);
    this.lifecycle.settle();
    return this.present(r, this.store.get(qualifiedName(r), stored.metadata.namespace ?? '', name) ?? stored);
  }

  delete(
    r: ResourceDef,
    ns: string,
    name: string,
    options: {
      gracePeriodSeconds?: number;
      preconditions?: { uid?: string; resourceVersion?: string };
      dryRun?: boolean;
    } = {},
  ): KubeObject {
    const res = qualifiedName(r);
    const current = this.store.get(res, r.namespaced ? ns : '', name);
    if (!current) throw errors.notFound(r, name);
    checkDeletePreconditions(r, name, current, options);
    if (options.dryRun) return current;
    const out = this.lifecycle.delete(r, current, options.gracePeriodSeconds);
    this.lifecycle.settle();
    return out;
  }

  /** POST pods/{name}/eviction: a delete that first asks the pod's disruption budget (pod-subresources.ts). */
  evict(ns: string, name: string, body: unknown, opts: { dryRun?: boolean } = {}): StatusBody {
    return evictPod(this, ns, name, body, opts);
  }

  /** POST pods/{name}/binding: what a custom scheduler does. */
  bind(ns: string, name: string, body: unknown): StatusBody {
    return bindPod(this, ns, name, body);
  }
}
