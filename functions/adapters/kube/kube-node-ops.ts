/**
 * NodeOps over the Kubernetes API.
 *
 * Writes are JSON merge patches (`application/merge-patch+json`). Read-modify-writes put the
 * resourceVersion they read into the patch (`metadata.resourceVersion`): the API server then
 * answers 409 Conflict when the node changed in between, and we re-read and retry. We
 * deliberately do not use a JSON-patch `test` op on the resourceVersion: a failed `test` comes
 * back as 422 (Unprocessable), indistinguishable from a malformed patch, so it could not be
 * retried safely. Taints are replaced as a whole list (merge patch replaces arrays), which is
 * exactly the read-modify-write we want; other taints keep their fields (timeAdded) untouched.
 */
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import type { V1Node, V1Taint } from '@kubernetes/client-node';
import type { CoreApi } from './api-methods.ts';
import { fromKubeError } from '../errors.ts';
import { currentClock } from '../clock.ts';
import { toNodeInfo } from './convert.ts';
import { listAll } from './list-all.ts';
import type { NodeCondition, NodeInfo, NodeMeta, Taint, TaintEffect } from './model.ts';
import { mergeStringMap, nodeDelta, sameCondition, withTaint, withoutTaint, type NodeChange } from './node-change.ts';
// The pure helpers live in node-change.ts (no import cycle); re-exported for existing callers.
export { mergeStringMap, withTaint, withoutTaint } from './node-change.ts';
// The Events a node change deserves (node-change-events.ts); re-exported likewise.
export { nodeChangeEvents } from './node-change-events.ts';
import { nodeChangeEvents } from './node-change-events.ts';
import { noEvents } from './kube-event-recorder.ts';
import type { EventRecorder, NodeOps, NodeUpdateOptions } from './ports.ts';
import { DEFAULT_CONFLICT_ATTEMPTS, retryOnConflict } from './retry.ts';

export interface KubeOpsOptions {
  /** Items per list page (`limit`); lists follow `continue`. */
  pageSize?: number;
  /** Tries for a read-modify-write before ConflictError. */
  conflictAttempts?: number;
  /** Where cordons, taints and evictions are recorded as Kubernetes Events; none when omitted. */
  events?: EventRecorder;
}

const MERGE_PATCH = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const STRATEGIC_PATCH = setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch);
/** Metadata-only lists; a server that does not know the form answers the plain JSON list instead. */
const METADATA_ONLY = setHeaderOptions(
  'Accept',
  'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json',
);

export class KubeNodeOps implements NodeOps {
  private readonly pageSize: number;
  private readonly attempts: number;
  private readonly events: EventRecorder;

  constructor(
    private readonly core: CoreApi,
    options: KubeOpsOptions = {},
  ) {
    this.pageSize = options.pageSize ?? 500;
    this.attempts = options.conflictAttempts ?? DEFAULT_CONFLICT_ATTEMPTS;
    this.events = options.events ?? noEvents;
  }

  // RBAC: nodes get
  async get(name: string): Promise<NodeInfo> {
    return toNodeInfo(await this.read(name));
  }

  // RBAC: nodes list
  async list(labelSelector?: string): Promise<NodeInfo[]> {
    try {
      const nodes = await listAll((cont) =>
        this.core.listNode({ limit: this.pageSize, _continue: cont, labelSelector }),
      );
      return nodes.map(toNodeInfo);
    } catch (err) {
      throw fromKubeError(err, `listing nodes${labelSelector ? ` (${labelSelector})` : ''}`);
    }
  }

  // RBAC: nodes list
  async listMetadata(labelSelector?: string): Promise<NodeMeta[]> {
    try {
      const nodes = await listAll((cont) =>
        this.core.listNode({ limit: this.pageSize, _continue: cont, labelSelector }, METADATA_ONLY),
      );
      return nodes.map((n) => ({
        name: n.metadata?.name ?? '',
        labels: { ...(n.metadata?.labels ?? {}) },
        annotations: { ...(n.metadata?.annotations ?? {}) },
      }));
    } catch (err) {
      throw fromKubeError(err, `listing node metadata${labelSelector ? ` (${labelSelector})` : ''}`);
    }
  }

  // RBAC: nodes get
  // RBAC: nodes/status patch
  async setCondition(name: string, condition: NodeCondition): Promise<boolean> {
    const node = await this.read(name);
    const now = (node.status?.conditions ?? []).find((c) => c.type === condition.type);
    if (
      now &&
      sameCondition(
        {
          type: now.type,
          status: now.status as NodeCondition['status'],
          reason: now.reason ?? '',
          message: now.message ?? '',
        },
        condition,
      )
    )
      return false;
    const at = new Date(currentClock().now());
    // Strategic merge by `type`: the kubelet's Ready and node-problem-detector's conditions stay.
    const entry = {
      type: condition.type,
      status: condition.status,
      reason: condition.reason,
      message: condition.message,
      lastHeartbeatTime: at,
      lastTransitionTime: now && now.status === condition.status ? now.lastTransitionTime : at,
    };
    try {
      await this.core.patchNodeStatus({ name, body: { status: { conditions: [entry] } } }, STRATEGIC_PATCH);
    } catch (err) {
      throw fromKubeError(err, `setting condition ${condition.type} on node ${name}`);
    }
    return true;
  }

  // RBAC: nodes get, patch
  cordon(name: string): Promise<boolean> {
    return this.setUnschedulable(name, true);
  }

  // RBAC: nodes get, patch
  uncordon(name: string): Promise<boolean> {
    return this.setUnschedulable(name, false);
  }

  // RBAC: nodes get, patch
  addTaint(name: string, taint: Taint): Promise<boolean> {
    return this.modify(name, `tainting node ${name}`, (n) => {
      const taints = withTaint(n.spec?.taints ?? [], taint);
      return taints && { spec: { taints } };
    });
  }

  // RBAC: nodes get, patch
  removeTaint(name: string, key: string, effect?: TaintEffect): Promise<boolean> {
    return this.modify(name, `untainting node ${name}`, (n) => {
      const taints = withoutTaint(n.spec?.taints ?? [], key, effect);
      return taints && { spec: { taints } };
    });
  }

  // RBAC: nodes get, patch
  setLabels(name: string, labels: Record<string, string | null>): Promise<boolean> {
    return this.modify(name, `labelling node ${name}`, (n) => {
      const patch = mergeStringMap(n.metadata?.labels ?? {}, labels);
      return patch && { metadata: { labels: patch } };
    });
  }

  // RBAC: nodes get, patch
  setAnnotations(name: string, annotations: Record<string, string | null>): Promise<boolean> {
    return this.modify(name, `annotating node ${name}`, (n) => {
      const patch = mergeStringMap(n.metadata?.annotations ?? {}, annotations);
      return patch && { metadata: { annotations: patch } };
    });
  }

  // RBAC: nodes get, patch
  async update(name: string, change: NodeChange, options: NodeUpdateOptions = {}): Promise<boolean> {
    const what = `updating node ${name}`;
    const patchOf = (cur: {
      taints: V1Taint[];
      labels: Record<string, string>;
      annotations: Record<string, string>;
      unschedulable: boolean;
    }) => {
      const d = nodeDelta(cur, change);
      if (!d) return undefined;
      const spec = {
        ...(d.taints ? { taints: d.taints } : {}),
        ...(d.unschedulable !== undefined ? { unschedulable: d.unschedulable } : {}),
      };
      const metadata = {
        ...(d.labels ? { labels: d.labels } : {}),
        ...(d.annotations ? { annotations: d.annotations } : {}),
      };
      return { ...(Object.keys(spec).length ? { spec } : {}), metadata };
    };
    if (options.blind) {
      if (change.addTaints?.length || change.removeTaints?.length)
        throw new Error(`${what}: a blind update cannot change taints (a merge patch replaces the list)`);
      const metadata = {
        ...(change.labels ? { labels: change.labels } : {}),
        ...(change.annotations ? { annotations: change.annotations } : {}),
      };
      return this.send(name, what, {
        ...(change.unschedulable !== undefined ? { spec: { unschedulable: change.unschedulable } } : {}),
        metadata,
      });
    }
    const basis = options.basis;
    if (basis) {
      // One request: the caller's read is the basis; a change since then is a 409, retried by the platform.
      const patch = patchOf(basis);
      if (!patch) return false;
      await this.send(name, what, {
        ...patch,
        metadata: { ...patch.metadata, resourceVersion: basis.resourceVersion },
      });
      await this.recordChange({ metadata: { name }, spec: { taints: basis.taints } }, patch);
      return true;
    }
    return this.modify(name, what, (n) =>
      patchOf({
        taints: n.spec?.taints ?? [],
        labels: n.metadata?.labels ?? {},
        annotations: n.metadata?.annotations ?? {},
        unschedulable: n.spec?.unschedulable === true,
      }),
    );
  }

  private async send(name: string, what: string, body: Record<string, unknown>): Promise<boolean> {
    try {
      await this.core.patchNode({ name, body }, MERGE_PATCH);
      return true;
    } catch (err) {
      throw fromKubeError(err, what);
    }
  }

  private async read(name: string): Promise<V1Node> {
    try {
      return await this.core.readNode({ name });
    } catch (err) {
      throw fromKubeError(err, `reading node ${name}`);
    }
  }

  /** Cordon needs no resourceVersion: setting one boolean is the same whatever raced with it. */
  private async setUnschedulable(name: string, on: boolean): Promise<boolean> {
    const node = await this.read(name);
    if ((node.spec?.unschedulable === true) === on) return false;
    const body = { spec: { unschedulable: on } };
    try {
      await this.core.patchNode({ name, body }, MERGE_PATCH);
    } catch (err) {
      throw fromKubeError(err, `${on ? 'cordoning' : 'uncordoning'} node ${name}`);
    }
    await this.recordChange(node, body);
    return true;
  }

  /** After a change went through: its Events (recording never throws). */
  private async recordChange(before: V1Node, patch: Record<string, unknown>): Promise<void> {
    const name = before.metadata?.name ?? '';
    for (const note of nodeChangeEvents(before, patch)) await this.events.record({ kind: 'Node', name }, note);
  }

  /**
   * Read, compute a merge patch from what was read (undefined = nothing to do), send it with the
   * read resourceVersion; on 409 start over.
   */
  private async modify(
    name: string,
    what: string,
    compute: (n: V1Node) => Record<string, unknown> | undefined,
  ): Promise<boolean> {
    const done = await retryOnConflict(what, this.attempts, async () => {
      const node = await this.read(name);
      const change = compute(node);
      if (change === undefined) return undefined;
      const meta = (change.metadata ?? {}) as Record<string, unknown>;
      const body = { ...change, metadata: { ...meta, resourceVersion: node.metadata?.resourceVersion } };
      await this.core.patchNode({ name, body }, MERGE_PATCH);
      return { node, change };
    });
    if (done === undefined) return false;
    await this.recordChange(done.node, done.change);
    return true;
  }
}
