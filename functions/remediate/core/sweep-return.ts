/**
 * The sweep's step for a node coming back (pure): after a reboot (a new boot id) or a person's `repaired-at`, each
 * GPU returns only on a passed probe, and a fault seen again climbs the ladder (handed to sweep-node.ts) or leaves the
 * node out.
 */
import type { Policy } from './policy.ts';
import { cmp, type Incident } from './state.ts';
import { notice } from './plan.ts';
import { probeReturn, type ReturnCause } from './return-probe.ts';
import { GPU_DEVICES_ANNOTATION } from '../../../events/index.ts';
import type { SweepFacts } from './sweep.ts';
import { MIN, type Escalation, type Stepped, type Work } from './sweep-work.ts';

/**
 * An awaiting-repair incident after its reboot, or after a person's `gpu-reflex.io/repaired-at` (`w.state.repairedAt`,
 * one that counts for it): evidence, not time (return-probe.ts).
 *
 * After a reboot the cloud adapter asked for, the node is back when it shows a new boot id and is Ready. Then a GPU
 * incident returns only on a passed health probe of its GPU; a node-wide incident (no GPU named) only on a passed
 * probe of each GPU the node had before the reboot (none known: it stays out). The fault seen again after it came
 * back, or a probe that fails (the GPU missing after the reboot, the fault still there), climbs the ladder
 * (replace-node) or leaves the node out, awaiting-repair, a person told: NVIDIA's resolution for an error that
 * persists after a reboot is to replace the hardware (xid.md, "if it persists after reboot, replace"). No return
 * within `repair.rebootTimeoutMinutes` is told to a person once.
 *
 * After a person's repaired-at the same probe, over the GPUs the node lists then for a node-wide incident (quiet time
 * alone returned it before: issue #27); a failed one keeps the node out and tells a person once, until a newer
 * repaired-at asks again; no GPU known keeps it out, a person told once. An adopted node (an orphan: our taint, no
 * history) has no fault to probe for: the person's word and quiet time.
 */
export function returnStep(
  i0: Incident,
  w: Work,
  facts: SweepFacts,
  policy: Pick<Policy, 'repair' | 'quietPeriodMinutes'>,
  close: (why: string, x?: Incident) => Incident,
): Stepped {
  const node = w.facts.node;
  const now = facts.now;
  let i = i0;
  // A GPU incident just back asks its probe at once; a node-wide one goes on as one that came back earlier.
  let justBack = false;
  if (i.reboot && !i.reboot.backAt) {
    const back = node.bootId !== undefined && node.bootId !== i.reboot.fromBoot && node.ready !== false;
    if (!back) return notBack(i, i.reboot, w, facts, policy);
    i = { ...i, reboot: { ...i.reboot, backAt: now.toISOString() } };
    justBack = true;
  }
  // Back from a reboot (its `backAt` known), or else returning after a person's repaired-at.
  const back = i.reboot?.backAt ? { ...i.reboot, backAt: i.reboot.backAt } : undefined;
  const repairedAt = w.state.repairedAt!;
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
  // Told once per `since` (the repaired-at, or the probe that failed); the node stays out meanwhile.
  const tellOnce = (since: string, text: string): Incident => {
    if (i.notifiedAt && Date.parse(i.notifiedAt) >= Date.parse(since)) return i;
    const told: Incident = { ...i, notifiedAt: now.toISOString() };
    w.notices.push(notice(i.action, node, text));
    w.reasons.push(text);
    w.touched.push(told);
    return told;
  };
  if (back && !(justBack && i.gpu) && cmp(i.lastAt, back.backAt) > 0)
    return notCured(`${i.key}: the fault came back at ${i.lastAt}, after the reboot (back at ${back.backAt})`);
  if (!i.reboot && !i.gpu && i.trigger === 'orphan') {
    const since = now.getTime() - Date.parse(repairedAt);
    return since >= policy.quietPeriodMinutes * MIN
      ? close(`${i.key}: repaired at ${repairedAt} and quiet for ${policy.quietPeriodMinutes} min, back in service`)
      : i;
  }
  const cause: ReturnCause = back ? { kind: 'reboot', backAt: back.backAt } : { kind: 'repaired', repairedAt };
  const s = probeReturn(i, cause, node, w.state, w.results, now, policy);
  const after = back ? `${node.name} is back from its reboot` : `${i.key}: repaired at ${repairedAt}`;
  const asked = (x: Incident, what: string, until: string) =>
    `${what} (${x.repair!.id}, ${policy.repair.probeSeconds} s); it returns only when ${until}`;
  const unknown =
    `the node agent wrote no ${GPU_DEVICES_ANNOTATION}): nothing can be probed, and unknown is not healthy; ` +
    'the node stays out';
  const again = 'the node stays out: a person must look, then annotate gpu-reflex.io/repaired-at=<time> again';
  switch (s.kind) {
    case 'wait':
      return i;
    case 'asked': {
      const what = i.gpu
        ? `health probe of ${i.gpu} requested`
        : `health probe of each of ${back ? 'its' : "the node's"} ${s.gpus} GPUs requested`;
      const until = i.gpu ? 'the probe passes' : 'every one passes';
      // A GPU incident back from its reboot before the probe existed (or whose ask was lost) asks it quietly.
      if (!(back && i.gpu && !justBack))
        w.reasons.push(asked(s.incident, `${after}${back ? ' (new boot id, Ready)' : ''}: ${what}`, until));
      w.touched.push(s.incident);
      return s.incident;
    }
    case 'unknown':
      return back
        ? notCured(`${i.key}: ${after}, but no GPU of it is known (${unknown}`)
        : tellOnce(repairedAt, `${after}, but no GPU of ${node.name} is known (${unknown}`);
    case 'passed':
      return close(
        back
          ? `${i.key}: ${back.by ? `repaired by ${back.by}` : 'rebooted'} at ${back.at}, ` +
              `back at ${back.backAt}; ${s.why}`
          : `${after}; ${s.why}`,
        s.incident,
      );
    case 'failed':
      if (back)
        return notCured(
          `${i.key}: ${after}, but ${s.why}` +
            (s.missing ? (i.gpu ? '; the node stays out' : '; a GPU is missing: the node stays out') : ''),
        );
      return tellOnce(
        i.repair!.at,
        `${after}, but ${s.why}${s.missing && !i.gpu ? '; a GPU is missing' : ''}; ${again}`,
      );
  }
}

/** Not back from its reboot (no new boot id, or not Ready): a person told once `repair.rebootTimeoutMinutes` after. */
function notBack(
  i: Incident,
  r: NonNullable<Incident['reboot']>,
  w: Work,
  facts: SweepFacts,
  policy: Pick<Policy, 'repair'>,
): Incident {
  const node = w.facts.node;
  const now = facts.now;
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
