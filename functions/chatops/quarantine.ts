import { GpuUuid, readMigInventory } from '../../events/index.ts';
import { NotFoundError } from '../adapters/errors.ts';
import type { NodeInfo } from '../adapters/kube/model.ts';
import type { Plan, Policy } from '../remediate/index.ts';
import { approvalIdOf, OPERATOR_REQUEST, remediate, toRemediationDetail } from '../remediate/index.ts';
import type { Applied } from '../lib/apply.ts';
import type { CommandPorts } from './command-ports.ts';
import type { ChatUser } from './run.ts';

/** `quarantine NODE GPU`: an operator's request through remediation's own planner and applier. */
/** `3` or `GPU-…` on a node: its UUID (and index where known), or what is wrong in words. */
export function resolveGpu(node: NodeInfo, gpu: string): { uuid: string; index?: number } | string {
  const listed = readMigInventory(node.annotations).inventory?.gpus ?? [];
  const declared = Number(
    node.labels['nvidia.com/gpu.count'] ??
      node.capacity?.['nvidia.com/gpu'] ??
      node.allocatable['nvidia.com/gpu'] ??
      NaN,
  );
  const count = Number.isInteger(declared) ? declared : listed.length > 0 ? listed.length : undefined;
  if (count === 0) return `node ${node.name} has no GPU`;
  if (/^\d+$/.test(gpu)) {
    const index = Number(gpu);
    if (count !== undefined && index >= count)
      return `node ${node.name} has no GPU ${index}: it has ${count} (0–${count - 1})`;
    const found = listed.find((g) => g.index === index);
    return found
      ? { uuid: found.uuid, index }
      : `node ${node.name} does not list its GPUs' UUIDs (no gpu-reflex.io/mig-inventory): name GPU ${index} by its ` +
          `UUID (nvidia-smi -L)`;
  }
  if (!GpuUuid.safeParse(gpu).success) return `"${gpu}" is not a GPU UUID (GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)`;
  const found = listed.find((g) => g.uuid.toLowerCase() === gpu.toLowerCase());
  if (listed.length > 0 && !found)
    return `node ${node.name} has no GPU ${gpu} (it lists ${listed.map((g) => `${g.index}: ${g.uuid}`).join(', ')})`;
  return found ? { uuid: found.uuid, index: found.index } : { uuid: gpu };
}

/** Answers a usage error (bad node, bad GPU) with a string; carries a real quarantine out otherwise. */
export async function quarantine(
  p: CommandPorts,
  asked: { policy: Policy; who: ChatUser; node: string; gpu: string; usage: string },
): Promise<string> {
  const { policy, who, node: nodeName, gpu: gpuArg, usage } = asked;
  let node: NodeInfo;
  try {
    node = await p.kube.nodes.get(nodeName);
  } catch (err) {
    if (err instanceof NotFoundError) return `no node ${nodeName} in the cluster. Usage: ${usage}`;
    throw err;
  }
  const gpu = resolveGpu(node, gpuArg);
  if (typeof gpu === 'string') return `${gpu}. Usage: ${usage}`;
  const now = new Date(p.clock.now());
  const by = `${who.platform}:${who.id}`;
  const event = {
    detailType: OPERATOR_REQUEST,
    detail: {
      eventId: `chat:${by}:${nodeName}:${gpu.uuid.slice(4, 12)}:${now.getTime()}`
        .replace(/[^A-Za-z0-9._:-]/g, '-')
        .slice(0, 128),
      node: nodeName,
      observedAt: now.toISOString(),
      gpu,
      action: 'quarantine-gpu',
      by,
    },
  } as const;
  const { plan, applied } = await remediate(event, {
    ...p.kube,
    publisher: p.publisher,
    notifier: p.notifier,
    policy,
    clock: p.clock,
    logger: p.logger,
    holder: p.holder,
  });
  const lead = p.dryRun ? 'dry run, nothing changed: ' : '';
  if (plan.kind === 'approval')
    return (
      `${lead}held back for approval (${approvalIdOf(plan)}): ${plan.approval?.summary ?? plan.reason}. An ` +
      `approver answers "approve ${approvalIdOf(plan)}"`
    );
  if (plan.kind === 'noop') return `${lead}nothing to do: ${plan.reason}`;
  return `${lead}${plan.reason.replace(/\.$/, '')}. ${outcomeWords(plan, applied, p.dryRun, gpu.uuid)}`;
}

/**
 * What the applier answered, step by step (the Remediation report's own reading of it): the plan's words say
 * what was decided ("evicting the 1 pod on it"), and a disruption budget, a failed call or a missing port can
 * leave that undone; the person who asked must read that here, not find the pod still on the faulty GPU.
 */
function outcomeWords(plan: Plan, applied: Applied, dryRun: boolean, gpu: string): string {
  const steps = toRemediationDetail(plan, applied, { occurredAt: new Date(0), dryRun }).steps;
  const list = (xs: string[]) => xs.slice(0, 5).join(', ') + (xs.length > 5 ? ` and ${xs.length - 5} more` : '');
  const pods = (n: number) => (n === 1 ? '1 pod' : `${n} pods`);
  const evicts = steps.filter((s) => s.kind === 'evict').map((s) => ({ ...s, target: s.target.replace(/^pod\//, '') }));
  const moved = evicts.filter((s) => s.result === 'done' || s.result === 'dry-run').map((s) => s.target);
  const gone = evicts.filter((s) => s.result === 'already').map((s) => s.target);
  const kept = evicts.filter((s) => s.result === 'blocked' || s.result === 'failed' || s.result === 'skipped');
  const undone = steps.filter(
    (s) => s.kind !== 'evict' && (s.result === 'failed' || s.result === 'skipped' || s.result === 'blocked'),
  );
  const done = [
    ...(moved.length > 0 ? [`${dryRun ? 'evict' : 'evicted'} ${pods(moved.length)} (${list(moved)})`] : []),
    ...(gone.length > 0 ? [`${pods(gone.length)} already gone (${list(gone)})`] : []),
  ];
  const notDone = [
    ...(kept.length > 0
      ? [
          `${pods(kept.length)} not evicted: ` +
            kept
              .slice(0, 5)
              .map((s) => `${s.target} (${s.result}${s.message ? `: ${s.message}` : ''})`)
              .join(', ') +
            (kept.length > 5 ? ` and ${kept.length - 5} more` : '') +
            `; ${kept.length === 1 ? 'it still runs' : 'they still run'} on ${gpu} until the sweep's retry ` +
            '(every minute) evicts ' +
            (kept.length === 1 ? 'it' : 'them'),
        ]
      : []),
    ...undone.map((s) => `${s.kind} ${s.target} ${s.result}${s.message ? `: ${s.message}` : ''}`),
  ];
  // No eviction asked (none on the GPU, or its pods left to finish): the plan's words said which.
  if (done.length === 0 && notDone.length === 0) done.push(dryRun ? 'carry out every step' : 'every step');
  return [
    ...(done.length > 0 ? [`${dryRun ? 'A live run would' : 'Done'}: ${done.join('; ')}`] : []),
    ...(notDone.length > 0 ? [`NOT done: ${notDone.join('; ')}`] : []),
  ].join('. ');
}
