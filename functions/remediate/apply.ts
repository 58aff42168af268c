/**
 * applyRemediation: carries a plan out through the ports, step by step, and says what happened
 * to each step. Node steps that fail throw (the whole invocation is retried: every step is
 * idempotent); a pod whose eviction fails is reported and left to the sweep; a notification
 * failure never fails anything. Dry run is not checked here: it is the ports' decorator.
 */
import { APPROVAL_REQUESTED, SCHEMA_VERSION, SOURCES, type ApprovalRequestedDetail } from '../../events/index.ts';
import type { NodeOps, PodOps } from '../adapters/kube/ports.ts';
import type { Taint, TaintEffect } from '../adapters/kube/model.ts';
import type { NodeChange } from '../adapters/kube/node-change.ts';
import type { EventPublisher } from '../adapters/bus.ts';
import type { Notifier } from '../adapters/chat/notifier.ts';
import { BadInputError } from '../adapters/errors.ts';
import { approvalIdOf, type StepResult } from './detail.ts';
import { encodeNodeState, HISTORY_ANNOTATION } from './state.ts';
import type { Plan, PlanStep } from './types.ts';

export interface ApplyPorts {
  nodes: NodeOps;
  pods: PodOps;
  publisher: EventPublisher;
  notifier: Notifier;
}

export interface ApplyOptions {
  taintKey: string;
  now: Date;
  /** How long an approval request stays open. */
  approvalTtlMs?: number;
}

function parseTaint(v: string | undefined): Taint {
  const m = /^([^=:]+)(?:=([^:]*))?:(NoSchedule|PreferNoSchedule|NoExecute)$/.exec(v ?? '');
  if (!m) throw new BadInputError(`plan step has a malformed taint ${JSON.stringify(v)}`);
  return { key: m[1]!, ...(m[2] ? { value: m[2] } : {}), effect: m[3] as TaintEffect };
}

function splitKeyValue(v: string | undefined): [string, string | undefined] {
  const i = (v ?? '').indexOf('=');
  return i < 0 ? [v ?? '', undefined] : [v!.slice(0, i), v!.slice(i + 1)];
}

const changed = (c: boolean, dryRun: boolean): StepResult => ({ result: dryRun ? 'dry-run' : c ? 'done' : 'already' });

async function applyStep(step: PlanStep, plan: Plan, ports: ApplyPorts, opts: ApplyOptions): Promise<StepResult> {
  const node = plan.target.node;
  const dry = plan.dryRun;
  switch (step.kind) {
    case 'taint':
      return changed(await ports.nodes.addTaint(node, parseTaint(step.value)), dry);
    case 'untaint': {
      const t = parseTaint(step.value);
      return changed(await ports.nodes.removeTaint(node, t.key, t.effect), dry);
    }
    case 'cordon':
      return changed(await ports.nodes.cordon(node), dry);
    case 'uncordon':
      return changed(await ports.nodes.uncordon(node), dry);
    case 'label': {
      const [k, v] = splitKeyValue(step.value);
      return changed(await ports.nodes.setLabels(node, { [k]: v ?? null }), dry);
    }
    case 'annotate': {
      const [k, v] = splitKeyValue(step.value);
      // The history annotation's value is the encoded next state, too long to repeat in the step.
      const value = k === HISTORY_ANNOTATION ? encodeNodeState(plan.nextState, { taintKey: opts.taintKey }).annotations[k] ?? null : v === undefined || v === '[]' ? null : v;
      return changed(await ports.nodes.setAnnotations(node, { [k]: value }), dry);
    }
    case 'evict': {
      const [, ns, name] = step.target.split('/');
      try {
        const r = await ports.pods.evict(ns!, name!);
        if (dry) return { result: 'dry-run' };
        if (r.outcome === 'blocked') return { result: 'blocked', message: r.reason.slice(0, 512) };
        return { result: r.outcome === 'gone' ? 'already' : 'done' };
      } catch (err) {
        return { result: 'failed', message: (err as Error).message.slice(0, 512) };
      }
    }
    case 'notify':
      await ports.notifier.notify({ title: `gpu-reflex: ${plan.action} on ${node}`, text: step.value ?? plan.reason, severity: plan.kind === 'noop' ? 'info' : 'warning' });
      return { result: dry ? 'dry-run' : 'done' };
    case 'approval':
      if (!dry) await ports.publisher.publish([{ source: SOURCES.functions, detailType: APPROVAL_REQUESTED, detail: approvalDetail(plan, step, opts) }]);
      return { result: dry ? 'dry-run' : 'done' };
    case 'reboot':
    case 'replace':
      // No cloud adapter is wired yet: the node waits in awaiting-repair and a person is told.
      return { result: 'skipped', message: `no cloud adapter to ${step.kind} ${node}: awaiting repair by a person` };
  }
}

function approvalDetail(plan: Plan, step: PlanStep, opts: ApplyOptions): ApprovalRequestedDetail {
  const approvalId = approvalIdOf(plan);
  return {
    schemaVersion: SCHEMA_VERSION,
    eventId: `${approvalId}:requested`,
    occurredAt: opts.now.toISOString(),
    approvalId,
    requestedBy: 'remediate',
    summary: (step.value ?? plan.reason).slice(0, 2048),
    plan: { incident: plan.incident, action: plan.action, scope: plan.scope, node: plan.target.node, gpus: plan.target.gpus, pods: plan.target.pods.map((p) => `${p.namespace}/${p.name}`), reason: plan.reason },
    expiresAt: new Date(opts.now.getTime() + (opts.approvalTtlMs ?? 3_600_000)).toISOString(),
  };
}

const NODE_STEPS = new Set<PlanStep['kind']>(['taint', 'untaint', 'cordon', 'uncordon', 'label', 'annotate']);

/** Every node step of a plan as one change, so the node gets one patch. */
function nodeChange(steps: readonly PlanStep[], plan: Plan, taintKey: string): NodeChange {
  const change: Required<NodeChange> = { addTaints: [], removeTaints: [], labels: {}, annotations: {}, unschedulable: undefined as unknown as boolean };
  let cordon: boolean | undefined;
  for (const step of steps) {
    if (step.kind === 'taint') change.addTaints.push(parseTaint(step.value));
    else if (step.kind === 'untaint') change.removeTaints.push(parseTaint(step.value));
    else if (step.kind === 'cordon') cordon = true;
    else if (step.kind === 'uncordon') cordon = false;
    else if (step.kind === 'label') {
      const [k, v] = splitKeyValue(step.value);
      change.labels[k] = v ?? null;
    } else if (step.kind === 'annotate') {
      const [k, v] = splitKeyValue(step.value);
      // The history annotation's value is the encoded next state, too long to repeat in the step.
      change.annotations[k] = k === HISTORY_ANNOTATION ? encodeNodeState(plan.nextState, { taintKey }).annotations[k] ?? null : v === undefined || v === '[]' ? null : v;
    }
  }
  const { unschedulable: _u, ...rest } = change;
  return cordon === undefined ? rest : { ...rest, unschedulable: cordon };
}

export async function applyRemediation(plan: Plan, ports: ApplyPorts, opts: ApplyOptions): Promise<StepResult[]> {
  const results: StepResult[] = new Array(plan.steps.length);
  // Node steps first, as one write: the taint and the cordon stop new work before anything moves.
  const nodeSteps = plan.steps.filter((s) => NODE_STEPS.has(s.kind));
  if (nodeSteps.length > 0) {
    const result = changed(await ports.nodes.update(plan.target.node, nodeChange(nodeSteps, plan, opts.taintKey)), plan.dryRun);
    plan.steps.forEach((s, i) => NODE_STEPS.has(s.kind) && (results[i] = result));
  }
  for (const [i, step] of plan.steps.entries()) if (!NODE_STEPS.has(step.kind)) results[i] = await applyStep(step, plan, ports, opts);
  return results;
}
