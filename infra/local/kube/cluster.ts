import { admitPod, defaultNode, invalidField, NODE_LEASE_NAMESPACE, nodeLease } from './admission.ts';
import { withTimeAdded } from './dra-devices.ts';
import { withDaemonSetStatus } from './daemonsets.ts';
import { errors, success, type ApiError, type StatusBody } from './errors.ts';
import { Lifecycle } from './lifecycle.ts';
import { MigManager, type MigLayouts } from './mig-manager.ts';
import { applyMergePatch, applyPatch, PATCH_TYPES, PatchError, PatchTooLarge } from './patch.ts';
import { evictionVerdict, withPdbStatus } from './pdb.ts';
import { normalizeQuantities } from './normalize.ts';
import { withQuotaStatus } from './quota.ts';
import { ServedApis, type ApiSettings } from './api-versions.ts';
import { apiVersionOf, qualifiedName, resource, type ResourceDef } from './resources.ts';
import { parseFieldSelector, parseLabelSelector, requirementsOf } from './selectors.ts';
import { Store } from './store.ts';
import { checkEviction } from './delete-options.ts';
import { checkObject } from './validation.ts';
import type { Clock, KubeObject, LabelSelectorSpec, Node, Pod } from './types.ts';

/**
 * The API server's behaviour, independent of HTTP: CRUD with resourceVersion preconditions,
 * patches, admission (limit ranges, quota), eviction against budgets, binding. Every write
 * ends by letting the lifecycle (scheduler, terminations, controllers) catch up synchronously,
 * so a client sees a settled cluster after each call.
 */
export interface ListOptions {
  labelSelector?: string;
  fieldSelector?: string;
  limit?: number;
  continue?: string;
}

export interface ListResult {
  items: KubeObject[];
  resourceVersion: string;
  continue?: string;
  remainingItemCount?: number;
}

export interface WriteOptions {
  dryRun?: boolean;
  subresource?: string;
}

type UpdateVerb = 'update' | 'patch';

const PODS = resource('pods');
const NAMESPACES = resource('namespaces');

const clone = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;
const same = (a: KubeObject, b: KubeObject) =>
  JSON.stringify({ ...a, metadata: { ...a.metadata, resourceVersion: '' } }) ===
  JSON.stringify({ ...b, metadata: { ...b.metadata, resourceVersion: '' } });

function badRequest(err: unknown): ApiError {
  return errors.badRequest(err instanceof Error ? err.message : String(err));
}

export interface AuditRecord {
  user: string;
  verb: string;
  resource: string;
  subresource?: string;
  namespace?: string;
  name?: string;
}
export const AUDIT_KEPT = 20_000;

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
  private podsSelectedBy(pdb: KubeObject): Pod[] {
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
    let labels, fields;
    try {
      labels = opts.labelSelector ? parseLabelSelector(opts.labelSelector) : [];
      fields = opts.fieldSelector ? parseFieldSelector(opts.fieldSelector) : [];
    } catch (err) {
      throw badRequest(err);
    }
    // The store's indexes (label, field, namespace) pick the candidates; only matches come back.
    let items = this.store.select(qualifiedName(r), {
      ...(r.namespaced && ns !== undefined ? { namespace: ns } : {}),
      labels,
      fields,
    });
    const key = (o: KubeObject) => `${o.metadata.namespace ?? ''}/${o.metadata.name}`;
    items.sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
    const rv = String(this.store.resourceVersion);
    if (opts.continue) {
      let after: string;
      try {
        after = (JSON.parse(Buffer.from(opts.continue, 'base64url').toString('utf8')) as { start: string }).start;
      } catch {
        throw errors.badRequest('continue key is not valid: illegal base64 data');
      }
      items = items.filter((o) => key(o) > after);
    }
    const result: ListResult = { items, resourceVersion: rv };
    if (opts.limit && opts.limit > 0 && items.length > opts.limit) {
      result.items = items.slice(0, opts.limit);
      result.remainingItemCount = items.length - opts.limit;
      result.continue = Buffer.from(
        JSON.stringify({ v: 'meta.k8s.io/v1', rv: Number(rv), start: key(result.items[result.items.length - 1]!) }),
      ).toString('base64url');
    }
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
    if (
      typeof next !== 'object' ||
      next === null ||
      typeof next.metadata !== 'object' ||
      next.metadata === null ||
      Array.isArray(next.metadata)
    )
      throw errors.badRequest('the object has no metadata');
    const rv = next.metadata.resourceVersion;
    if (rv !== undefined && rv !== '' && rv !== current.metadata.resourceVersion) throw errors.conflict(r, name);
    if (next.metadata.name !== undefined && next.metadata.name !== name)
      throw errors.invalid(r, name, 'metadata.name', 'field is immutable');
    let merged: KubeObject = {
      ...next,
      apiVersion: current.apiVersion,
      kind: current.kind,
      metadata: {
        ...next.metadata,
        name,
        ...(current.metadata.namespace !== undefined ? { namespace: current.metadata.namespace } : {}),
        uid: current.metadata.uid,
        creationTimestamp: current.metadata.creationTimestamp,
        resourceVersion: current.metadata.resourceVersion,
        ...(current.metadata.deletionTimestamp
          ? {
              deletionTimestamp: current.metadata.deletionTimestamp,
              deletionGracePeriodSeconds: current.metadata.deletionGracePeriodSeconds,
            }
          : {}),
      },
    };
    if (merged.metadata.deletionTimestamp === undefined) delete merged.metadata.deletionTimestamp;
    checkObject(r, merged, verb);
    const bad = normalizeQuantities(merged);
    if (bad) throw errors.invalid(r, name, bad, 'Invalid value: must be a quantity such as 500m, 16Gi or 8');
    const wrong = invalidField(merged);
    if (wrong) throw errors.invalid(r, name, ...wrong);
    if (r.hasStatus) {
      if (opts.subresource === 'status')
        merged = {
          ...current,
          metadata: { ...current.metadata, labels: merged.metadata.labels, annotations: merged.metadata.annotations },
          status: merged.status,
        };
      else if (current.status !== undefined) merged.status = current.status;
      else delete merged.status;
    }
    if (JSON.stringify(merged.spec) !== JSON.stringify(current.spec))
      merged.metadata.generation = (current.metadata.generation ?? 1) + 1;
    if (r.plural === 'pods' && (merged as Pod).spec?.nodeName !== (current as Pod).spec.nodeName)
      throw errors.invalid(
        r,
        name,
        'spec',
        'Forbidden: pod updates may not change fields other than `spec.containers[*].image`, ' +
          '`spec.initContainers[*].image`, `spec.activeDeadlineSeconds`, `spec.tolerations` (only additions to ' +
          'existing tolerations) or `spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was ' +
          'previously negative)',
      );
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
    const pre = options.preconditions;
    if (pre?.uid && pre.uid !== current.metadata.uid) {
      throw errors.conflictMessage(
        r,
        name,
        `Operation cannot be fulfilled on ${res} "${name}": Precondition failed: UID in precondition: ${pre.uid}, ` +
          `UID in object meta: ${current.metadata.uid}`,
      );
    }
    if (pre?.resourceVersion && pre.resourceVersion !== current.metadata.resourceVersion) {
      throw errors.conflictMessage(
        r,
        name,
        `Operation cannot be fulfilled on ${res} "${name}": Precondition failed: ResourceVersion in ` +
          `precondition: ${pre.resourceVersion}, ResourceVersion in object ` +
          `meta: ${current.metadata.resourceVersion}`,
      );
    }
    if (options.dryRun) return current;
    const out = this.lifecycle.delete(r, current, options.gracePeriodSeconds);
    this.lifecycle.settle();
    return out;
  }

  /** POST pods/{name}/eviction: a delete that first asks the pod's disruption budget. */
  evict(ns: string, name: string, body: unknown, opts: { dryRun?: boolean } = {}): StatusBody {
    // The body is checked before the pod is looked up, as the real eviction REST handler does.
    const options = checkEviction(ns, name, body);
    const pod = this.store.pod(ns, name);
    if (!pod) throw errors.notFound(PODS, name);
    // deleteOptions.preconditions, as the real eviction handler checks them: a pod recreated under
    // the same name (a StatefulSet's) is another pod, and an eviction meant for the old one fails.
    const pre = options.preconditions;
    if (pre?.uid !== undefined && pre.uid !== pod.metadata.uid) {
      throw errors.conflictMessage(
        PODS,
        name,
        `Operation cannot be fulfilled on pods "${name}": Precondition failed: UID in precondition: ${pre.uid}, UID ` +
          `in object meta: ${pod.metadata.uid}`,
      );
    }
    if (pre?.resourceVersion !== undefined && pre.resourceVersion !== pod.metadata.resourceVersion) {
      throw errors.conflictMessage(
        PODS,
        name,
        `Operation cannot be fulfilled on pods "${name}": Precondition failed: ResourceVersion in ` +
          `precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${pod.metadata.resourceVersion}`,
      );
    }
    if (pod.metadata.deletionTimestamp) return success(201);
    const verdict = evictionVerdict(pod, this.store.list('poddisruptionbudgets.policy', ns), (pdb) =>
      this.podsSelectedBy(pdb),
    );
    if (!verdict.allowed) {
      if (verdict.code === 500) throw errors.internal(verdict.message);
      throw errors.tooManyRequests(verdict.message, [{ reason: 'DisruptionBudget', message: verdict.cause ?? '' }]);
    }
    if (!(options.dryRun || opts.dryRun)) {
      this.lifecycle.delete(PODS, pod, options.gracePeriodSeconds);
      this.lifecycle.settle();
    }
    return success(201);
  }

  /** POST pods/{name}/binding: what a custom scheduler does. */
  bind(ns: string, name: string, body: unknown): StatusBody {
    const pod = this.store.pod(ns, name);
    if (!pod) throw errors.notFound(PODS, name);
    const target = ((body ?? {}) as { target?: { name?: string } }).target?.name;
    if (!target) throw errors.invalid(PODS, name, 'target.name', 'Required value');
    if (pod.spec.nodeName)
      throw errors.conflictMessage(
        PODS,
        name,
        `Operation cannot be fulfilled on pods/binding "${name}": pod ${name} is already assigned to node ` +
          `"${pod.spec.nodeName}"`,
      );
    this.lifecycle.bind(pod, target);
    this.lifecycle.settle();
    return success(201);
  }
}
