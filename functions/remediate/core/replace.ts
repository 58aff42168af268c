/**
 * Replacing a broken node through its ACK node pool, capacity first (issue #13; pure):
 *
 *   drained → grow: the pool's desired size set to one more (absolute, so a retry cannot add two)
 *           → wait, across sweeps, for a node of the pool created since then to be Ready
 *             (none within `repair.replaceTimeoutMinutes`: a person is told, nothing is removed)
 *           → remove: the node's instance taken out of the pool and released (RemoveNodePoolNodes,
 *             no drain: remediation drained it; ACK lowers the desired size itself)
 *           → the incident closes when the node is gone (sweep-jobs.ts follows the task there,
 *             since the node and its history leave together); a failed removal is told to a person, and so
 *             is one ACK says succeeded while the node is still there `repair.replaceTimeoutMinutes` later
 *             (and, once, one whose task is still running then).
 *
 * Never started where the pool may not be sized by gpu-reflex (`ReplaceFacts.refused`: not in the
 * autoscaler's policy, ACK's own autoscaler, subscription instances) or where one more node would
 * pass the policy's maximum: a person is told instead.
 */
import type { CloudAction } from '../../lib/plan.ts';
import type { Policy } from './policy.ts';
import { cmp, type Incident } from './state.ts';
import type { NodeFacts, ReplaceFacts } from './types.ts';

/**
 * True when this round may start or move a replacement for the incident, so its pool's facts are
 * worth reading: one under way, a drain that leads to replace-node (when done or timed out), or a
 * node back from its reboot with replace-node up its ladder: the fault seen again, or its GPU's probe after the
 * reboot failing (return-probe.ts climbs then, in this very sweep: without the pool read, the replacement was
 * handed to a person for good, "its node pool could not be read"). The probe is a few minutes; then it closes.
 */
export function needsReplaceFacts(i: Incident): boolean {
  if (i.phase !== 'draining' && i.phase !== 'awaiting-repair') return false;
  if (i.replace) return true;
  const rest = i.ladder.slice(i.level + 1);
  if (i.phase === 'draining') return i.action === 'replace-node' || rest[0] === 'replace-node';
  return i.reboot?.backAt !== undefined && rest.includes('replace-node');
}

/** What the sweep does with a replacement this round: nothing, or a new incident with what to do and say. */
export type ReplaceStep =
  { kind: 'wait' } | { kind: 'act'; incident: Incident; cloud?: CloudAction; why: string; tell: boolean };

const MIN = 60_000;

/**
 * The drained node's replacement begins (`i`: the incident as it goes to awaiting-repair).
 * `others`: replacements in the same pool that began this round (the facts' size predates them).
 */
export function startReplace(
  i: Incident,
  node: NodeFacts,
  f: ReplaceFacts | undefined,
  now: Date,
  why: string,
  others = 0,
): ReplaceStep & { kind: 'act' } {
  const person = (because: string): ReplaceStep & { kind: 'act' } => ({
    kind: 'act',
    incident: i,
    why:
      `${why}: awaiting-repair, a person must replace it (${because}), then annotate ` +
      `gpu-reflex.io/repaired-at=<time>`,
    tell: true,
  });
  if (!f) return person('its node pool could not be read');
  if (f.refused) return person(f.refused);
  const pool = f.pool;
  if (!pool || !f.instanceId) return person(`it names no ECS instance of an ACK node pool`);
  const from = pool.desired + others;
  if (from + 1 > pool.max)
    return person(
      `node pool ${pool.name} is at ${from} of its maximum ${pool.max} nodes (autoscale policy): a ` +
        `new node first would pass it`,
    );
  const to = from + 1;
  return {
    kind: 'act',
    incident: { ...i, replace: { at: now.toISOString(), pool: pool.id, instanceId: f.instanceId, to } },
    cloud: { kind: 'replace', step: 'grow', node: node.name, pool: pool.id, from, to },
    why:
      `${why}: replacing it, capacity first: node pool ${pool.name} grows ${from} → ${to}; once ` +
      `a new node is Ready, ${node.name}'s instance ${f.instanceId} is removed from the pool and released`,
    tell: false,
  };
}

/** A replacement under way, one sweep further. */
/** `claimed`: new nodes other replacements took this round (facts mark those of earlier rounds held). */
export function stepReplace(
  i: Incident,
  r: NonNullable<Incident['replace']>,
  node: NodeFacts,
  f: ReplaceFacts | undefined,
  now: Date,
  policy: Policy,
  claimed: ReadonlySet<string> = new Set(),
): ReplaceStep {
  const toldSince = (at: string) => i.notifiedAt !== undefined && Date.parse(i.notifiedAt) > Date.parse(at);
  if (!r.readyAt) {
    // Capacity first: only a node that joined the pool after it was asked to grow, and is Ready.
    const fresh = f?.members.find(
      (m) =>
        m.name !== node.name &&
        m.ready &&
        !m.held &&
        !claimed.has(m.name) &&
        m.createdAt !== undefined &&
        cmp(m.createdAt, r.at) >= 0,
    );
    if (fresh) {
      return {
        kind: 'act',
        incident: { ...i, replace: { ...r, newNode: fresh.name, readyAt: now.toISOString() } },
        cloud: { kind: 'replace', step: 'remove', node: node.name, pool: r.pool, instanceId: r.instanceId },
        why:
          `${fresh.name} joined node pool ${r.pool} and is Ready: ${node.name}'s instance ` +
          `${r.instanceId} is removed from the pool and released (ACK lowers the desired size back)`,
        tell: false,
      };
    }
    if (now.getTime() - Date.parse(r.at) >= policy.repair.replaceTimeoutMinutes * MIN) {
      if (toldSince(r.at)) return { kind: 'wait' };
      const why =
        `${node.name}'s replacement: node pool ${r.pool} was asked for ${r.to} nodes at ` +
        `${r.at} and no new node is Ready after ${policy.repair.replaceTimeoutMinutes} min: nothing ` +
        `was removed; a person must look (is the pool out of stock?)`;
      return { kind: 'act', incident: { ...i, notifiedAt: now.toISOString() }, why, tell: true };
    }
    // The grow did not reach ACK (an error, the autoscaler held the pool): asked again, one more
    // than the pool has now, never more than first asked, so it cannot add two.
    if (f?.pool && f.pool.desired < r.to) {
      const to = f.pool.desired + 1;
      return {
        kind: 'act',
        incident: { ...i, replace: { ...r, to } },
        cloud: { kind: 'replace', step: 'grow', node: node.name, pool: r.pool, from: f.pool.desired, to },
        why:
          `${node.name}'s replacement: node pool ${r.pool} has ${f.pool.desired} nodes, not the ` +
          `${r.to} asked: asking again for ${to}`,
        tell: false,
      };
    }
    return { kind: 'wait' };
  }
  if (f?.removal?.state === 'failed') {
    if (toldSince(r.readyAt)) return { kind: 'wait' };
    const why =
      `removing ${node.name}'s instance ${r.instanceId} from node pool ${r.pool} failed ` +
      `(${f.removal.error ?? 'no detail'}): ${r.newNode ?? 'the new node'} serves in its place, ` +
      `${node.name} stays out of service; a person must remove it`;
    return { kind: 'act', incident: { ...i, notifiedAt: now.toISOString() }, why, tell: true };
  }
  // ACK's `success` is not the node gone: the node (still here, on the instance that was removed) past the
  // replacement's own deadline is a removal that did not happen, escalated as a failed one is.
  if (
    f?.removal?.state === 'success' &&
    f.instanceId === r.instanceId &&
    now.getTime() - Date.parse(r.readyAt) >= policy.repair.replaceTimeoutMinutes * MIN
  ) {
    if (toldSince(r.readyAt)) return { kind: 'wait' };
    const why =
      `removing ${node.name}'s instance ${r.instanceId} from node pool ${r.pool} did not happen: its ACK task ` +
      `${f.removal.taskId ?? '(id not on record)'} ended, ACK said success, yet ${node.name} is still in the pool ` +
      `on instance ${r.instanceId} ${policy.repair.replaceTimeoutMinutes} min later: ` +
      `${r.newNode ?? 'the new node'} serves in its place, ${node.name} stays out of service; a person must remove it`;
    return { kind: 'act', incident: { ...i, notifiedAt: now.toISOString() }, why, tell: true };
  }
  // A state ACK does not document (DescribeTaskInfo: running, success, failed) is neither under way nor over: the
  // removal is followed as before (the incident closes when the node is gone) and a person told once per word.
  if (f?.removal?.state === 'unknown' && r.removalTold !== (f.removal.raw ?? '')) {
    const word = f.removal.raw ?? '';
    const why =
      `${node.name}'s removal from node pool ${r.pool}: its ACK task answers ` +
      `${word ? `state '${word}'` : 'no state'}, ` +
      `which gpu-reflex does not know (ACK documents running, success, failed): not taken as done or failed; ` +
      `${node.name} stays out of service until it is gone; a person must look at the task`;
    return { kind: 'act', incident: { ...i, replace: { ...r, removalTold: word } }, why, tell: true };
  }
  // A task still running past the replacement's deadline keeps the node out of service, silently: a person is told
  // once (`removalTold`: ACK's word, 'running'), and the removal followed as before (a failure after is still told).
  if (
    f?.removal?.state === 'running' &&
    r.removalTold !== 'running' &&
    now.getTime() - Date.parse(r.readyAt) >= policy.repair.replaceTimeoutMinutes * MIN
  ) {
    const why =
      `${node.name}'s removal from node pool ${r.pool}: its ACK task ${f.removal.taskId ?? '(id not on record)'} ` +
      `is still running ${policy.repair.replaceTimeoutMinutes} min after it was asked: ${node.name} stays out of ` +
      `service until it is gone; a person may look at the task`;
    return { kind: 'act', incident: { ...i, replace: { ...r, removalTold: 'running' } }, why, tell: true };
  }
  // Asked, but no task recorded (the answer was lost): asked again; ACK refuses an instance already leaving.
  if (f && !f.removal && now.getTime() > Date.parse(r.readyAt)) {
    return {
      kind: 'act',
      incident: i,
      cloud: { kind: 'replace', step: 'remove', node: node.name, pool: r.pool, instanceId: r.instanceId },
      why: `${node.name}'s removal from node pool ${r.pool} has no task on record: asking again`,
      tell: false,
    };
  }
  return { kind: 'wait' };
}
