import { parseQuantity } from './quantity.ts';
import type { Store, StoreEvent } from './store.ts';
import type { Node } from './types.ts';

/**
 * NVIDIA mig-manager, simulated: setting the node label `nvidia.com/mig.config=<name>` starts a
 * reconfiguration. The manager writes `nvidia.com/mig.config.state=pending`, and after
 * `reconfigureSeconds` on the cluster clock replaces the node's `nvidia.com/mig-*` capacity and
 * allocatable (and GPU Feature Discovery's `nvidia.com/mig-<profile>.count` labels) with the
 * named layout's, then writes `success`; an unknown layout name ends in `failed`.
 * Like the real one it never evicts pods: the caller must drain first (docs/mig.md).
 *
 * Layouts are per node, as device-plugin resources: `{ "all-1g.10gb": { "nvidia.com/mig-1g.10gb": 56 } }`.
 */
export type MigLayouts = Record<string, Record<string, string | number>>;

const CONFIG = 'nvidia.com/mig.config';
const STATE = 'nvidia.com/mig.config.state';
const MIG_RESOURCE = /^nvidia\.com\/mig-(.+)$/;
const MIG_COUNT_LABEL = /^nvidia\.com\/mig-.+\.count$/;

export class MigManager {
  /** Node → the config it must move to, and when it is done (undefined until `pending` is written). */
  private readonly work = new Map<string, { config: string; due?: number }>();

  constructor(
    private readonly layouts: MigLayouts,
    private readonly reconfigureSeconds: number,
  ) {}

  observe(e: StoreEvent): void {
    if (e.resource !== 'nodes' || e.type !== 'MODIFIED') return;
    const before = e.previous?.metadata.labels?.[CONFIG];
    const after = e.object.metadata.labels?.[CONFIG];
    if (after !== undefined && after !== before) this.work.set(e.object.metadata.name, { config: after });
  }

  /** Writes due state changes; returns nothing, every change goes through the store. */
  settle(store: Store, now: number): void {
    for (const [name, job] of [...this.work]) {
      const node = store.node(name);
      if (!node || node.metadata.labels?.[CONFIG] !== job.config) {
        if (!node) this.work.delete(name);
        continue;
      }
      if (job.due === undefined) {
        job.due = now + this.reconfigureSeconds * 1000;
        store.put('nodes', withLabels(node, { [STATE]: 'pending' }));
        continue;
      }
      if (job.due > now) continue;
      this.work.delete(name);
      const layout = this.layouts[job.config];
      store.put('nodes', layout ? applyLayout(node, layout) : withLabels(node, { [STATE]: 'failed' }));
    }
  }
}

function withLabels(node: Node, labels: Record<string, string>): Node {
  return { ...node, metadata: { ...node.metadata, labels: { ...node.metadata.labels, ...labels } } };
}

function applyLayout(node: Node, layout: Record<string, string | number>): Node {
  const swap = (list: Record<string, string | number> | undefined) => {
    const out: Record<string, string | number> = {};
    for (const [k, v] of Object.entries(list ?? {})) if (!MIG_RESOURCE.test(k)) out[k] = v;
    for (const [k, v] of Object.entries(layout)) out[k] = String(v);
    return out;
  };
  const labels: Record<string, string> = {};
  for (const [k, v] of Object.entries(node.metadata.labels ?? {})) if (!MIG_COUNT_LABEL.test(k)) labels[k] = v;
  for (const [k, v] of Object.entries(layout)) {
    const m = MIG_RESOURCE.exec(k);
    if (m) labels[`nvidia.com/mig-${m[1]}.count`] = String(parseQuantity(v));
  }
  labels[STATE] = 'success';
  return { ...node, metadata: { ...node.metadata, labels }, status: { ...node.status, capacity: swap(node.status?.capacity), allocatable: swap(node.status?.allocatable) } };
}
