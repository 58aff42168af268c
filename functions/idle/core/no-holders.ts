import type { IdleFacts, IdleFinding, IdlePlan } from './plan-types.ts';
import { INSTANCE_TYPE_LABEL, OWNER_ANNOTATION, POOL_LABEL } from './plan-types.ts';
import { withHistory } from './history.ts';
import { ruleFor, type IdlePolicy } from './policy.ts';
import { idleCost } from './readings.ts';

/**
 * A summary without holders (the agent could not read PodResources: a kubelet restart, a failed read) says nothing
 * of which pod held which device in its window, so no device reads idle for anyone: the node's open runs end where
 * their last window ended (their idle time kept in the history), a told owner hears it cancelled with why, and no
 * eviction follows from it — as for a stalled window (readings.ts, unsampled). Left to the gap rule, a run was
 * carried over such windows however busy they were, and their minutes counted idle toward a deadline.
 */
export function endRunsWithoutHolders(f: IdleFacts, policy: IdlePolicy, plan: IdlePlan, we: number): IdlePlan {
  if (f.record.tracks.length === 0) return plan;
  const node = f.node.name;
  const instanceType = f.node.labels[INSTANCE_TYPE_LABEL];
  const findings = f.record.tracks
    .filter((t) => t.notifiedAt !== undefined)
    .map((t): IdleFinding => {
      const pod = f.pods.find(
        (p) => p.namespace === t.namespace && p.name === t.pod && (!p.uid || !t.uid || p.uid === t.uid),
      );
      const owner = pod?.annotations[OWNER_ANNOTATION];
      const idleMs = t.lastEnd - t.since;
      const cost = idleCost(policy, instanceType, idleMs, t.share ?? 1);
      const what = t.mig ? `MIG device ${t.mig}` : `GPU ${t.gpu}`;
      const cancelled = t.evictAt !== undefined ? '; its eviction is cancelled' : '';
      return {
        state: 'cancelled',
        track: t,
        team: pod?.labels[policy.teamLabel] ?? t.namespace,
        ...(owner ? { owner } : {}),
        rule: ruleFor(policy, t.namespace, f.node.labels[POOL_LABEL]),
        at: we,
        idleMs,
        ...(cost ? { cost } : {}),
        reason:
          `${t.namespace}/${t.pod}: ${what} on ${node}: the summary names no holders (PodResources unknown): ` +
          `it is not counted idle${cancelled}`,
      };
    });
  const record = withHistory(f.record, [], f.record.tracks, we);
  return { ...plan, record, recordChanged: JSON.stringify(record) !== JSON.stringify(f.record), findings };
}
