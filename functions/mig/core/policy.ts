/**
 * The MIG rebalancer's policy (MIG_POLICY_FILE, YAML or JSON; every field optional), validated
 * with zod so a mistake names its field:
 *
 *   preemption:
 *     enabled: false          # off: a GPU with an instance in use is never relaid
 *     minPriorityGap: 1000    # a pod is preempted only for pods at least this much higher
 *     maxGpusPerRound: 1      # GPUs with instances in use relaid in one round, at most
 *     protect:                # never preempted, whatever their priority
 *       - { namespace: kube-system }
 *       - { priorityClassName: system-node-critical }
 *     notify: true            # a chat notice names the pods preempted
 *     approvalMinutes: 30     # set: each preempting relayout waits for "approve ID" in chat (this
 *                             # long; undecided, denied or expired, those pods are not preempted)
 *
 * Why preemption is opt-in: a relaid GPU loses every instance (mig-manager recreates them all),
 * so each preempted pod loses its work; only an operator can say that a priority gap is worth it.
 */
import * as z from 'zod';
import { parseConfigText } from '../../lib/yaml-text.ts';

const K8S_NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

/** One protection: every pod of a namespace, or every pod of a PriorityClass. */
const ProtectRule = z.union([
  z.object({ namespace: z.string().regex(K8S_NAME, 'must be a namespace name') }).strict(),
  z.object({ priorityClassName: z.string().regex(K8S_NAME, 'must be a PriorityClass name') }).strict(),
]);
export type ProtectRule = z.infer<typeof ProtectRule>;

export const PreemptionPolicySchema = z
  .object({
    enabled: z.boolean().default(false),
    // PriorityClass values are int32; a gap of 0 would let equals preempt each other.
    minPriorityGap: z.number().int().min(1).max(2_147_483_647).default(1000),
    maxGpusPerRound: z.number().int().min(1).max(64).default(1),
    protect: z.array(ProtectRule).max(100).default([]),
    notify: z.boolean().default(true),
    // Set: a relayout that preempts waits for a person's "approve ID" in chat, this many minutes.
    approvalMinutes: z.number().int().min(1).max(1440).optional(),
  })
  .strict();
export type PreemptionPolicy = z.output<typeof PreemptionPolicySchema>;

export const MigPolicySchema = z
  .object({ preemption: PreemptionPolicySchema.default(PreemptionPolicySchema.parse({})) })
  .strict();
export type MigPolicy = z.output<typeof MigPolicySchema>;

export const DEFAULT_MIG_POLICY: MigPolicy = MigPolicySchema.parse({});

export class MigPolicyError extends Error {
  override name = 'MigPolicyError';
}

export function parseMigPolicy(text: string, source = 'MIG policy'): MigPolicy {
  return parseConfigText(text, source, MigPolicySchema, (m) => new MigPolicyError(m));
}

/** The rule that protects a pod, in words, or undefined. */
export function protectedBy(
  pod: { namespace: string; priorityClassName?: string },
  rules: readonly ProtectRule[],
): string | undefined {
  for (const r of rules) {
    if ('namespace' in r && r.namespace === pod.namespace) return `namespace ${r.namespace} is protected`;
    if ('priorityClassName' in r && r.priorityClassName === pod.priorityClassName)
      return `PriorityClass ${r.priorityClassName} is protected`;
  }
  return undefined;
}
