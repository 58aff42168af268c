/**
 * The node labeler (`label-nodes`): on each GPU Inventory, read the node, plan its labels
 * (core/planner.ts, pure) and carry the plan out on the reflex skeleton: the label changes, the
 * labeler's record (annotation `gpu-reflex.io/labeler`) and the Node Labels Changed event (the
 * outbox) in one patch sent against the node as read (its resourceVersion: a node changed since
 * is a 409, retried), then published. No lease: the resourceVersion is the lock, and one node's
 * labels are all one invocation touches.
 */
import {
  NODE_LABELS_CHANGED,
  SCHEMA_VERSION,
  SOURCES,
  type GpuInventoryDetail,
  type NodeLabelsChangedDetail,
} from '../../events/index.ts';
import type { EventPublisher, PublishedEvent } from '../adapters/bus.ts';
import type { Notifier } from '../adapters/chat/notifier.ts';
import type { Clock } from '../adapters/clock.ts';
import type { NodeOps, PodOps } from '../adapters/kube/ports.ts';
import type { RecordCodec } from '../lib/apply.ts';
import type { Logger } from '../adapters/logger.ts';
import { readOutbox } from '../lib/outbox.ts';
import { emptyEdit, noActions, type Actions } from '../lib/plan.ts';
import { carryOut } from '../lib/reflex.ts';
import type { LabelerConfig } from './core/config.ts';
import { encodeLabelerRecord, planLabels, type LabelerRecord, type LabelPlan } from './core/planner.ts';

export interface LabelDeps {
  nodes: Pick<NodeOps, 'get' | 'update' | 'setCondition'>;
  /** The applier's port; the labeler never evicts. */
  pods: Pick<PodOps, 'evict'>;
  publisher: EventPublisher;
  notifier: Notifier;
  clock: Clock;
  logger: Logger;
  config: LabelerConfig;
}

export interface LabelOutcome {
  plan: LabelPlan;
  /** Events published this invocation (this plan's, and any an earlier one left in the outbox). */
  published: number;
}

const codec: RecordCodec<LabelerRecord> = encodeLabelerRecord;

/** The plan as the applier's actions: the label changes and the record, one node edit. */
export function labelActions(plan: LabelPlan): Actions<LabelerRecord> {
  if (plan.kind === 'noop') return noActions();
  const labels = Object.fromEntries(plan.changes.map((c) => [c.key, c.to]));
  return {
    ...noActions<LabelerRecord>(),
    nodeEdit: { ...emptyEdit<LabelerRecord>(plan.node), labels, record: plan.record },
  };
}

function labelsEvent(plan: Extract<LabelPlan, { kind: 'relabel' }>, now: number): PublishedEvent {
  const detail: NodeLabelsChangedDetail = {
    schemaVersion: SCHEMA_VERSION,
    // One per node and inventory: a redelivered inventory renders the same event.
    eventId: `labels:${plan.node}:${Date.parse(plan.record.observedAt)}`.slice(0, 128),
    occurredAt: new Date(now).toISOString(),
    node: plan.node,
    inventoryObservedAt: plan.record.observedAt,
    changes: plan.changes
      .slice(0, 32)
      .map((c) => ({ key: c.key, from: c.from, to: c.to, reason: c.reason.slice(0, 512) })),
    leftAlone: plan.left.slice(0, 32).map((l) => ({ key: l.key, value: l.value, wanted: l.wanted, why: l.why })),
    reason: plan.reason.slice(0, 2048),
    dryRun: false,
  };
  return { source: SOURCES.functions, detailType: NODE_LABELS_CHANGED, detail, resources: [`node/${plan.node}`] };
}

export async function labelNode(deps: LabelDeps, inv: GpuInventoryDetail): Promise<LabelOutcome> {
  // A node gone is NotFoundError: already done (the handler acknowledges it).
  const node = await deps.nodes.get(inv.node);
  const plan = planLabels(node, inv, deps.config);
  for (const w of plan.warnings) deps.logger.warn('label-nodes', { node: node.name, warning: w });
  // Someone else's label that disagrees with the inventory: reported (here, in the handler's
  // outcome and in the event's leftAlone), never touched. Info: it repeats with every inventory.
  const theirs = plan.left.filter((l) => l.why !== 'gfd-runs-here');
  if (theirs.length > 0) deps.logger.info('label-nodes: labels left alone', { node: node.name, left: theirs });
  const pending = readOutbox(node.annotations);
  const events = () =>
    plan.kind === 'relabel' && plan.changes.length > 0 ? [labelsEvent(plan, deps.clock.now())] : [];
  const out = await carryOut(
    { node: node.name, pending, actions: labelActions(plan), events, codec, basis: node },
    deps,
  );
  if (plan.kind === 'relabel')
    deps.logger.info('label-nodes', { node: node.name, changes: plan.changes, reason: plan.reason });
  return { plan, published: out.published.length };
}
