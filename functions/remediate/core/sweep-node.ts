/**
 * The sweep's steps for a node that must be repaired (pure): a failed GPU repair climbing its ladder
 * within the blast radius, the drained node's reboot or replacement (or a person told), and its
 * return after a reboot.
 */
import { checkBlastRadius } from './blast-radius.ts';
import type { Policy } from './policy.ts';
import { evictable } from './scope.ts';
import { cmp, isOpen, type Incident } from './state.ts';
import { startReplace, type ReplaceStep } from './replace.ts';
import { notice } from './plan.ts';
import {
  askNodeProbes,
  askNodeRepairProbes,
  askReturnProbe,
  nodeGpusOf,
  probing,
  stepNodeProbes,
  stepReturnProbe,
} from './return-probe.ts';
import { nodeProbes } from './gpu-repair.ts';
import { GPU_DEVICES_ANNOTATION } from '../../../events/index.ts';
import type { SweepFacts } from './sweep.ts';
import { MIN, type Work } from './sweep-work.ts';

/**
 * A GPU repair failed: the incident climbs its ladder (reboot, then replace) as a node drain,
 * within the blast radius like any drain; at the top of the ladder a person is told.
 */
export function climb(i: Incident, why: string, w: Work, facts: SweepFacts, policy: Policy): Incident {
  const node = w.facts.node;
  const now = facts.now.toISOString();
  const next = i.ladder[i.level + 1];
  if (!next || next === 'quarantine-gpu' || next === 'observe' || next === 'restart-workload' || next === 'ignore') {
    const text = `${why}; nothing further up its ladder: awaiting-repair, a person must repair ${i.gpu ?? node.name}, then annotate gpu-reflex.io/repaired-at=<time>`;
    const waiting: Incident = { ...i, phase: 'awaiting-repair', since: now, notifiedAt: now };
    w.notices.push(notice(i.action, node, text));
    w.reasons.push(text);
    w.touched.push(waiting);
    return waiting;
  }
  const out = w.state.incidents.some(
    (x) => isOpen(x) && x.key !== i.key && (x.phase === 'draining' || x.phase === 'awaiting-repair'),
  );
  const verdict = checkBlastRadius(policy, w.facts.pool, node.name, out);
  const escalated: Incident = { ...i, action: next, level: i.level + 1, escalatedAt: now, since: now };
  if (!verdict.allowed) {
    const held: Incident = { ...escalated, phase: 'awaiting-approval' };
    const text = `${why}; ${next} on node ${node.name} is held back: ${verdict.words}. A person must approve; the sweep acts once the window has room`;
    w.notices.push(notice(next, node, text));
    w.reasons.push(text);
    w.touched.push(held);
    return held;
  }
  const pods = evictable(w.facts.pods);
  const draining: Incident = {
    ...escalated,
    phase: 'draining',
    pods: [...new Set([...i.pods, ...pods.map((p) => p.uid)])],
  };
  w.evictions.push(...pods);
  const text = `${why}; escalating to ${next}: draining node ${node.name} first`;
  w.notices.push(notice(next, node, text));
  w.reasons.push(text);
  w.touched.push(draining);
  return draining;
}

export function toRepair(
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
  if (repair && caps?.repairOwner) {
    // Not ours to repair: no cloud call; the node's return (new boot id, Ready) is watched as after
    // our own reboot, and no return within repair.rebootTimeoutMinutes is told to a person.
    const next: Incident = {
      ...rest,
      reboot: {
        at: now,
        ...(w.facts.node.bootId ? { fromBoot: w.facts.node.bootId } : {}),
        by: caps.repairOwner.slice(0, 128),
        ...gpusBefore(i, w),
      },
      phase: 'awaiting-repair',
      since: now,
      notifiedAt: now,
    };
    const text = `${why}: ${caps.repairOwner} repairs this node, so gpu-reflex defers (no reboot or replace of its own); once the node is back it returns ${returnsWhen(i)}`;
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
    if (sibling)
      return replaced(
        {
          kind: 'act',
          incident: { ...waiting, replace: sibling },
          why: `${why}: the replacement under way replaces it`,
          tell: false,
        },
        waiting,
        w,
      );
    const pool = w.facts.replace?.pool?.id;
    return replaced(
      startReplace(waiting, w.facts.node, w.facts.replace, facts.now, why, pool ? (w.round.grows.get(pool) ?? 0) : 0),
      waiting,
      w,
    );
  }
  const rebooting =
    repair === 'reboot-node' && can
      ? { reboot: { at: now, ...(w.facts.node.bootId ? { fromBoot: w.facts.node.bootId } : {}), ...gpusBefore(i, w) } }
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
export function replaced(s: ReplaceStep, i: Incident, w: Work): Incident {
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

/**
 * After a reboot the cloud adapter asked for: the node is back when it shows a new boot id and is
 * Ready. Then a GPU incident returns only on a passed health probe of its GPU (return-probe.ts:
 * evidence, not time); a node-wide incident (no GPU named) only on a passed probe of each GPU the
 * node had before the reboot (none known: it stays out). The fault seen
 * again after it came back, or a probe that fails (the GPU missing after the reboot, the fault
 * still there), climbs the ladder (replace-node) or leaves the node out, awaiting-repair, a person
 * told: NVIDIA's resolution for an error that persists after a reboot is to replace the hardware
 * (xid.md, "if it persists after reboot, replace"). No return within `repair.rebootTimeoutMinutes`
 * is told to a person once.
 */
export function afterReboot(
  i: Incident,
  r: NonNullable<Incident['reboot']>,
  w: Work,
  facts: SweepFacts,
  policy: Policy,
  close: (why: string, x?: Incident) => Incident,
): Incident {
  const node = w.facts.node;
  const now = facts.now;
  if (!r.backAt) {
    const back = node.bootId !== undefined && node.bootId !== r.fromBoot && node.ready !== false;
    if (back) {
      const backAt = now.toISOString();
      const backed: Incident = { ...i, reboot: { ...r, backAt } };
      // A node-wide incident goes on at once to its per-GPU probes (below).
      if (!i.gpu) return afterReboot(backed, backed.reboot!, w, facts, policy, close);
      const asked = askReturnProbe(backed, { kind: 'reboot', backAt }, now)!;
      w.reasons.push(
        `${node.name} is back from its reboot (new boot id, Ready): health probe of ${i.gpu} requested (${asked.repair!.id}, ${policy.repair.probeSeconds} s); it returns only when the probe passes`,
      );
      w.touched.push(asked);
      return asked;
    }
    const late = now.getTime() - Date.parse(r.at) >= policy.repair.rebootTimeoutMinutes * MIN;
    if (!late || (i.notifiedAt && Date.parse(i.notifiedAt) > Date.parse(r.at))) return i;
    const text = `${node.name} was ${r.by ? `left to ${r.by}` : 'rebooted'} at ${r.at} and has not come back (no new boot id${node.ready === false ? ', not Ready' : ''}) after ${policy.repair.rebootTimeoutMinutes} min: a person must look`;
    w.notices.push(notice(i.action, node, text));
    w.reasons.push(text);
    const told: Incident = { ...i, notifiedAt: now.toISOString() };
    w.touched.push(told);
    return told;
  }
  const notCured = (why: string): Incident => {
    const { repair: _asked, ...x } = i;
    const nextRung = i.ladder.indexOf('replace-node', i.level + 1) >= 0 ? 'replace-node' : undefined;
    if (nextRung)
      return toRepair(
        { ...x, level: i.ladder.indexOf(nextRung, i.level + 1), action: nextRung, escalatedAt: now.toISOString() },
        nextRung,
        w,
        facts,
        `${why}; escalating to ${nextRung}`,
      );
    return toRepair(x, undefined, w, facts, why);
  };
  if (cmp(i.lastAt, r.backAt) > 0)
    return notCured(`${i.key}: the fault came back at ${i.lastAt}, after the reboot (back at ${r.backAt})`);
  if (i.gpu) {
    // A GPU incident back from its reboot before the probe existed (or whose ask was lost): ask now.
    const cause = { kind: 'reboot', backAt: r.backAt } as const;
    if (!probing(i, cause)) {
      const asked = askReturnProbe(i, cause, now)!;
      w.touched.push(asked);
      return asked;
    }
    const s = stepReturnProbe(i, w.state, w.results, now, policy);
    if (s.kind === 'wait') return i;
    if (s.kind === 'failed')
      return notCured(
        `${i.key}: ${node.name} is back from its reboot, but ${s.why}${s.missing ? '; the node stays out' : ''}`,
      );
    return close(
      `${i.key}: ${r.by ? `repaired by ${r.by}` : 'rebooted'} at ${r.at}, back at ${r.backAt}; ${s.why}`,
      s.incident,
    );
  }
  // A node-wide incident: each GPU the node had before the reboot returns on its own passed probe.
  if (!probing(i, { kind: 'reboot', backAt: r.backAt }) || nodeProbes(i).length === 0) {
    const asked = askNodeWide(i, r.backAt, w, facts, policy);
    if (asked) return asked;
    return notCured(
      `${i.key}: ${node.name} is back from its reboot, but no GPU of it is known (the node agent wrote no ` +
        `${GPU_DEVICES_ANNOTATION}): nothing can be probed, and unknown is not healthy; the node stays out`,
    );
  }
  const s = stepNodeProbes(i, w.state, w.results, now, policy);
  if (s.kind === 'wait') return i;
  if (s.kind === 'failed')
    return notCured(
      `${i.key}: ${node.name} is back from its reboot, but ${s.why}` +
        (s.missing ? '; a GPU is missing: the node stays out' : ''),
    );
  return close(
    `${i.key}: ${r.by ? `repaired by ${r.by}` : 'rebooted'} at ${r.at}, back at ${r.backAt}; ${s.why}`,
    s.incident,
  );
}

/**
 * Asks a node-wide incident's per-GPU probes: the GPUs recorded before the reboot, else those the
 * node lists now. Undefined when none is known (nothing asked).
 */
function askNodeWide(i: Incident, backAt: string, w: Work, facts: SweepFacts, policy: Policy): Incident | undefined {
  const gpus = i.reboot?.gpus ?? nodeGpusOf(w.facts.node);
  const asked = askNodeProbes(i, gpus, backAt, facts.now);
  if (!asked) return undefined;
  w.reasons.push(
    `${w.facts.node.name} is back from its reboot (new boot id, Ready): health probe of each of its ` +
      `${gpus.length} GPUs requested (${asked.repair!.id}, ${policy.repair.probeSeconds} s); ` +
      'it returns only when every one passes',
  );
  w.touched.push(asked);
  return asked;
}

/**
 * A person's `gpu-reflex.io/repaired-at` after the fault: a GPU incident asks the node agent for the
 * health probe and returns only when it passes (return-probe.ts); a failed one keeps the node out and
 * tells a person once, until a newer repaired-at asks again. A node-wide incident asks one probe per GPU
 * the node lists and returns only when every one passed (quiet time alone returned it before: issue #27);
 * no GPU known keeps it out, a person told once.
 */
export function afterRepair(
  i: Incident,
  repairedAt: string,
  w: Work,
  facts: SweepFacts,
  policy: Policy,
  close: (why: string, x?: Incident) => Incident,
): Incident {
  const now = facts.now;
  const cause = { kind: 'repaired', repairedAt } as const;
  if (!i.gpu && i.trigger === 'orphan') {
    // An adopted node (our taint, no history): no fault is known to probe for; the person's word and quiet time.
    const since = now.getTime() - Date.parse(repairedAt);
    return since >= policy.quietPeriodMinutes * MIN
      ? close(`${i.key}: repaired at ${repairedAt} and quiet for ${policy.quietPeriodMinutes} min, back in service`)
      : i;
  }
  if (!i.gpu) return afterNodeRepair(i, repairedAt, w, facts, policy, close);
  if (!probing(i, cause)) {
    const asked = askReturnProbe(i, cause, now)!;
    w.reasons.push(
      `${i.key}: repaired at ${repairedAt}: health probe of ${i.gpu} requested (${asked.repair!.id}, ${policy.repair.probeSeconds} s); it returns only when the probe passes`,
    );
    w.touched.push(asked);
    return asked;
  }
  const s = stepReturnProbe(i, w.state, w.results, now, policy);
  if (s.kind === 'wait') return i;
  if (s.kind === 'passed') return close(`${i.key}: repaired at ${repairedAt}; ${s.why}`, s.incident);
  // Told once per probe; the node stays out until a person repairs it again (a newer repaired-at).
  if (i.notifiedAt && Date.parse(i.notifiedAt) >= Date.parse(i.repair!.at)) return i;
  const text = `${i.key}: repaired at ${repairedAt}, but ${s.why}; the node stays out: a person must look, then annotate gpu-reflex.io/repaired-at=<time> again`;
  const told: Incident = { ...i, notifiedAt: now.toISOString() };
  w.notices.push(notice(i.action, w.facts.node, text));
  w.reasons.push(text);
  w.touched.push(told);
  return told;
}

/** A node-wide incident after a person's repaired-at: each GPU the node lists returns on its own passed probe. */
function afterNodeRepair(
  i: Incident,
  repairedAt: string,
  w: Work,
  facts: SweepFacts,
  policy: Policy,
  close: (why: string, x?: Incident) => Incident,
): Incident {
  const now = facts.now;
  const node = w.facts.node;
  const tellOnce = (since: string, text: string): Incident => {
    if (i.notifiedAt && Date.parse(i.notifiedAt) >= Date.parse(since)) return i;
    const told: Incident = { ...i, notifiedAt: now.toISOString() };
    w.notices.push(notice(i.action, node, text));
    w.reasons.push(text);
    w.touched.push(told);
    return told;
  };
  if (!probing(i, { kind: 'repaired', repairedAt }) || nodeProbes(i).length === 0) {
    const gpus = nodeGpusOf(node);
    const asked = askNodeRepairProbes(i, gpus, repairedAt, now);
    if (!asked)
      return tellOnce(
        repairedAt,
        `${i.key}: repaired at ${repairedAt}, but no GPU of ${node.name} is known (the node agent wrote no ` +
          `${GPU_DEVICES_ANNOTATION}): nothing can be probed, and unknown is not healthy; the node stays out`,
      );
    w.reasons.push(
      `${i.key}: repaired at ${repairedAt}: health probe of each of the node's ${gpus.length} GPUs requested ` +
        `(${asked.repair!.id}, ${policy.repair.probeSeconds} s); it returns only when every one passes`,
    );
    w.touched.push(asked);
    return asked;
  }
  const s = stepNodeProbes(i, w.state, w.results, now, policy);
  if (s.kind === 'wait') return i;
  if (s.kind === 'passed') return close(`${i.key}: repaired at ${repairedAt}; ${s.why}`, s.incident);
  // Told once per probe; the node stays out until a person repairs it again (a newer repaired-at).
  return tellOnce(
    i.repair!.at,
    `${i.key}: repaired at ${repairedAt}, but ${s.why}${s.missing ? '; a GPU is missing' : ''}; the node stays ` +
      'out: a person must look, then annotate gpu-reflex.io/repaired-at=<time> again',
  );
}
