/**
 * The sweep's steps for a node coming back (pure): after a reboot (a new boot id) or a person's `repaired-at`, each
 * GPU returns only on a passed probe, and a fault seen again climbs the ladder (handed to sweep-node.ts) or leaves the
 * node out.
 */
import type { Policy } from './policy.ts';
import { cmp, type Incident } from './state.ts';
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
import { MIN, type Escalation, type Stepped, type Work } from './sweep-work.ts';

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
  policy: Pick<Policy, 'repair' | 'quietPeriodMinutes'>,
  close: (why: string, x?: Incident) => Incident,
): Stepped {
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
        `${node.name} is back from its reboot (new boot id, Ready): health probe of ${i.gpu} requested ` +
          `(${asked.repair!.id}, ${policy.repair.probeSeconds} s); it returns only when the probe passes`,
      );
      w.touched.push(asked);
      return asked;
    }
    const late = now.getTime() - Date.parse(r.at) >= policy.repair.rebootTimeoutMinutes * MIN;
    if (!late || (i.notifiedAt && Date.parse(i.notifiedAt) > Date.parse(r.at))) return i;
    const text =
      `${node.name} was ${r.by ? `left to ${r.by}` : 'rebooted'} at ${r.at} and has not come back ` +
      `(no new boot id${node.ready === false ? ', not Ready' : ''}) after ${policy.repair.rebootTimeoutMinutes} min: ` +
      'a person must look';
    w.notices.push(notice(i.action, node, text));
    w.reasons.push(text);
    const told: Incident = { ...i, notifiedAt: now.toISOString() };
    w.touched.push(told);
    return told;
  }
  const notCured = (why: string): Escalation => {
    const { repair: _asked, ...x } = i;
    const nextRung = i.ladder.indexOf('replace-node', i.level + 1) >= 0 ? 'replace-node' : undefined;
    if (nextRung)
      return {
        escalate: 'repair',
        incident: {
          ...x,
          level: i.ladder.indexOf(nextRung, i.level + 1),
          action: nextRung,
          escalatedAt: now.toISOString(),
        },
        repair: nextRung,
        why: `${why}; escalating to ${nextRung}`,
      };
    return { escalate: 'repair', incident: x, repair: undefined, why };
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
function askNodeWide(
  i: Incident,
  backAt: string,
  w: Work,
  facts: SweepFacts,
  policy: Pick<Policy, 'repair'>,
): Incident | undefined {
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
  policy: Pick<Policy, 'repair' | 'quietPeriodMinutes'>,
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
      `${i.key}: repaired at ${repairedAt}: health probe of ${i.gpu} requested ` +
        `(${asked.repair!.id}, ${policy.repair.probeSeconds} s); it returns only when the probe passes`,
    );
    w.touched.push(asked);
    return asked;
  }
  const s = stepReturnProbe(i, w.state, w.results, now, policy);
  if (s.kind === 'wait') return i;
  if (s.kind === 'passed') return close(`${i.key}: repaired at ${repairedAt}; ${s.why}`, s.incident);
  // Told once per probe; the node stays out until a person repairs it again (a newer repaired-at).
  if (i.notifiedAt && Date.parse(i.notifiedAt) >= Date.parse(i.repair!.at)) return i;
  const text =
    `${i.key}: repaired at ${repairedAt}, but ${s.why}; the node stays out: a person must look, ` +
    'then annotate gpu-reflex.io/repaired-at=<time> again';
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
  policy: Pick<Policy, 'repair' | 'quietPeriodMinutes'>,
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
