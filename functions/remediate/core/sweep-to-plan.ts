/**
 * A swept node's work turned into its plan (pure): the state it ends in, its node edit and fence changes, the GPU
 * actions to ask, and the Remediation it reports; none when nothing changed.
 */
import type { Policy } from './policy.ts';
import { editsScheduling } from '../../lib/plan.ts';
import { nodeChanges } from './reconcile.ts';
import { isOpen } from './state.ts';
import type { Plan } from './types.ts';
import { notice, withState } from './plan.ts';
import { type Work } from './sweep-work.ts';
import type { SweepFacts } from './sweep.ts';

export function toPlan(w: Work, facts: SweepFacts, policy: Policy): Plan | undefined {
  const { node } = w.facts;
  const prev = w.facts.state;
  let next = withState(prev, w.state, node, w.backend);
  // Back in service: it was out (a held-back node never left, so it is not "restored").
  const restored = next.phase === 'healthy' && prev.phase !== 'healthy' && prev.phase !== 'awaiting-approval';
  if (restored) next = { ...next, restoredAt: facts.now.toISOString() };
  const changes = nodeChanges(prev, next, node, policy);
  const { nodeEdit: edit, deviceTaints: taints } = changes;
  const notices = [...w.notices];
  const back = w.back;
  const main = w.touched.at(-1) ?? next.incidents.find(isOpen);
  if (restored || back.length > 0) {
    const what = restored
      ? `node ${node.name} is back in service`
      : `${back.map((i) => i.qid ?? i.gpu ?? i.key).join(', ')} back in service on ${node.name}`;
    const onEvidence = back.length > 0 && back.every((i) => i.probedAt !== undefined);
    const mig = back.some((i) => i.migBackAt !== undefined) ? ', its MIG instances applied again by mig-manager' : '';
    const repair = back.some((i) => i.reboot?.backAt !== undefined)
      ? 'its reboot'
      : back.some((i) => i.resetAt !== undefined)
        ? 'a reset'
        : 'its repair';
    notices.push(
      notice(
        'restore',
        node,
        onEvidence
          ? `${what} after ${repair} and a passed health probe${mig}`
          : `${what} after ${policy.quietPeriodMinutes} quiet minutes`,
        'info',
      ),
    );
  }
  // One eviction per pod, however many incidents asked for it.
  const evictions = [
    ...new Map(w.evictions.map((p) => [p.uid, { namespace: p.namespace, name: p.name, uid: p.uid }])).values(),
  ];
  if (
    !edit &&
    !taints &&
    evictions.length === 0 &&
    notices.length === 0 &&
    w.cloud.length === 0 &&
    w.nodeEvents.length === 0
  )
    return undefined;
  const rejectedOnly = !restored && back.length === 0 && main?.phase === 'closed';
  const action: Plan['action'] =
    restored || back.length > 0 || (w.unlatching && w.touched.length === 0)
      ? 'restore'
      : rejectedOnly
        ? 'observe'
        : (main?.action ?? 'observe');
  const repairing = w.touched.some((i) => i.phase === 'awaiting-repair');
  // Only our own bookkeeping changes (history, quarantined-gpus): nothing anyone would notice.
  const onlyBookkeeping =
    !editsScheduling(edit) && !taints && evictions.length === 0 && notices.length === 0 && w.cloud.length === 0;
  const scope = main?.scope === 'mig-instance' || main?.scope === 'gpu' ? (restored ? 'node' : main.scope) : 'node';
  return {
    kind: onlyBookkeeping ? 'noop' : 'act',
    incident: main?.key ?? `${node.name}/sweep`,
    action,
    scope,
    ...(main?.profile ? { profile: main.profile } : {}),
    phase: action === 'restore' ? 'restored' : repairing ? 'awaiting-repair' : onlyBookkeeping ? 'skipped' : 'decided',
    target: {
      node: node.name,
      gpus: (main?.gpu ? [main.gpu] : (node.gpus ?? [])).slice(0, 16),
      migInstances:
        main?.gpu && main.mig
          ? [
              {
                gpuUuid: main.gpu,
                gpuInstanceId: main.mig.gi,
                ...(main.mig.ci !== undefined ? { computeInstanceId: main.mig.ci } : {}),
              },
            ]
          : [],
      pods: evictions,
    },
    ...changes,
    evictions,
    notices,
    cloud: w.cloud,
    ...(w.nodeEvents.length > 0 ? { nodeEvents: w.nodeEvents } : {}),
    // Two incidents on one node (an XID and its health condition) often say the same thing: once.
    reason:
      [
        ...new Set(
          restored
            ? [`node ${node.name} is back in service: untainted, uncordoned, labelled healthy`, ...w.reasons]
            : w.reasons,
        ),
      ].join('. ') || `sweep of ${node.name}: bookkeeping only`,
    trigger: {
      eventId: `sweep:${node.name}:${facts.now.getTime()}`,
      detailType: 'Scheduled Event',
      node: node.name,
      observedAt: facts.now.toISOString(),
    },
    nextState: next,
  };
}
