/**
 * The node's repair in the sweep (pure), carried out once for what a step handed on (`escalate`): a
 * failed GPU repair's climb (sweep-climb.ts), the drained node's reboot or replacement (or a person
 * told), a replacement's next step. Its return after a reboot is sweep-return.ts.
 */
import type { Policy } from './policy.ts';
import { isOpen, type Incident } from './state.ts';
import { startReplace, type ReplaceStep } from './replace.ts';
import { notice } from './plan.ts';
import { nodeGpusOf } from './return-probe.ts';
import type { SweepFacts } from './sweep.ts';
import { type Stepped, type Work } from './sweep-work.ts';
import { climb } from './sweep-climb.ts';

/**
 * Carries out what a step handed on (sweep-work.ts `Escalation`): once, after the step, so the steps
 * never call back into the node's repair.
 */
export function escalate(s: Stepped, w: Work, facts: SweepFacts, policy: Policy): Incident {
  if (!('escalate' in s)) return s;
  switch (s.escalate) {
    case 'replace':
      return replaced(s.step, s.incident, w);
    case 'repair':
      return toRepair(s.incident, s.repair, w, facts, s.why);
    case 'climb':
      return climb(s.incident, s.why, w, facts, policy);
  }
}

function toRepair(
  i: Incident,
  repair: 'reboot-node' | 'replace-node' | undefined,
  w: Work,
  facts: SweepFacts,
  why: string,
): Incident {
  const node = w.facts.node.name;
  const caps = w.facts.capabilities ?? facts.capabilities;
  const now = facts.now.toISOString();
  const { reboot: _done, ...rest } = i;
  const before = gpusBefore(i, w);
  if (repair && caps?.repairOwner) {
    // Not ours to repair: no cloud call; the node's return (new boot id, Ready) is watched as after
    // our own reboot, and no return within repair.rebootTimeoutMinutes is told to a person.
    const next: Incident = {
      ...rest,
      reboot: {
        at: now,
        ...(w.facts.node.bootId ? { fromBoot: w.facts.node.bootId } : {}),
        by: caps.repairOwner.slice(0, 128),
        ...before,
      },
      phase: 'awaiting-repair',
      since: now,
      notifiedAt: now,
    };
    const text =
      `${why}: ${caps.repairOwner} repairs this node, so gpu-reflex defers (no reboot or replace of its own); ` +
      `once the node is back it returns ${returnsWhen(i)}`;
    w.notices.push(notice(i.action, w.facts.node, text));
    w.reasons.push(text);
    w.touched.push(next);
    return next;
  }
  const can = repair === 'reboot-node' ? caps?.reboot : repair === 'replace-node' ? caps?.replace : false;
  if (repair === 'replace-node' && can) {
    const waiting: Incident = { ...rest, phase: 'awaiting-repair', since: now, notifiedAt: now };
    // One replacement per node, however many of its incidents lead to it: a second one follows the first.
    const sibling = [...w.touched, ...w.state.incidents].find(
      (x) => x.key !== i.key && isOpen(x) && x.replace,
    )?.replace;
    const pool = w.facts.replace?.pool?.id;
    const s: ReplaceStep = sibling
      ? {
          kind: 'act',
          incident: { ...waiting, replace: sibling },
          why: `${why}: the replacement under way replaces it`,
          tell: false,
        }
      : startReplace(waiting, w.facts.node, w.facts.replace, facts.now, why, pool ? (w.round.grows.get(pool) ?? 0) : 0);
    return replaced(s, waiting, w);
  }
  const rebooting =
    repair === 'reboot-node' && can
      ? { reboot: { at: now, ...(w.facts.node.bootId ? { fromBoot: w.facts.node.bootId } : {}), ...before } }
      : {};
  const next: Incident = { ...rest, ...rebooting, phase: 'awaiting-repair', since: now, notifiedAt: now };
  if (repair === 'reboot-node' && can) {
    // One reboot per node, however many of its incidents lead to it.
    if (!w.cloud.some((c) => c.kind === 'reboot' && c.node === node)) w.cloud.push({ kind: 'reboot', node });
    w.reasons.push(`${why}: rebooting it; once it is back it returns ${returnsWhen(i)}`);
  } else {
    const what = repair
      ? `${repair === 'reboot-node' ? 'reboot' : 'replace'} it (${caps?.unreachable ?? 'no cloud adapter can'})`
      : 'repair it';
    const text = `${why}: awaiting-repair, a person must ${what}, then annotate gpu-reflex.io/repaired-at=<time>`;
    w.notices.push(notice(i.action, w.facts.node, text));
    w.reasons.push(text);
  }
  w.touched.push(next);
  return next;
}

/**
 * A node-wide incident's reboot records the GPUs the node lists before it (the agent's
 * allocatable-devices and MIG inventory): after it, each must pass its own probe.
 */
function gpusBefore(i: Incident, w: Work): { gpus?: string[] } {
  const gpus = i.gpu ? [] : nodeGpusOf(w.facts.node);
  return gpus.length > 0 ? { gpus } : {};
}

const returnsWhen = (i: Incident): string =>
  i.gpu ? `only when the health probe of ${i.gpu} passes` : 'only when each of its GPUs passes its own health probe';

/** Carries a replacement's step into the sweep's work: its cloud action, its words, a notice when a person must act. */
function replaced(s: ReplaceStep, i: Incident, w: Work): Incident {
  if (s.kind === 'wait') return i;
  const c = s.cloud;
  if (c?.kind === 'replace' && !w.cloud.some((x) => x.kind === 'replace' && x.step === c.step && x.node === c.node)) {
    w.cloud.push(c);
    if (c.step === 'grow') w.round.grows.set(c.pool, (w.round.grows.get(c.pool) ?? 0) + 1);
  }
  if (s.incident.replace?.newNode) w.round.claimed.add(s.incident.replace.newNode);
  if (s.tell) w.notices.push(notice(s.incident.action, w.facts.node, s.why));
  w.reasons.push(s.why);
  w.touched.push(s.incident);
  return s.incident;
}
