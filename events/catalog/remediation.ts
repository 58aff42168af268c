/** `Remediation` — what was decided and done about a fault, and why (example: ./remediation.example.json). */
import * as z from 'zod';
import { REMEDIATION_ACTIONS } from '../xid.ts';
import { actorBase, count, EventId, GpuUuid, NodeName, Timestamp } from '../common.ts';
import { HEALTH_CONDITIONS } from './gpu-health-changed.ts';

export const REMEDIATION = 'Remediation';

export const REMEDIATION_PHASES = [
  'decided', // a plan exists; nothing done yet
  'acted', // every step done (or dry-run)
  'partial', // some steps blocked (PDB) and will be retried by the sweep
  'awaiting-approval', // blast-radius limit reached: a person must approve
  'awaiting-repair', // drained; the repair step (reboot/replace) is pending
  'restored', // healthy for the quiet period: back in service
  'failed',
  'skipped', // duplicate, stale or superseded event: nothing to do
] as const;

export const STEP_KINDS = [
  'taint',
  'untaint',
  'cordon',
  'uncordon',
  'label',
  'annotate',
  'evict',
  'fence',
  'unfence',
  'reset',
  'probe',
  'condition',
  'reboot',
  'replace',
  'scale',
  'notify',
  'approval',
] as const;

export const RemediationStepSchema = z
  .object({
    kind: z.enum(STEP_KINDS),
    /** What it acted on: `node/gpu-a100-1`, `pod/ml/train-7`. */
    target: z.string().min(1).max(300),
    result: z.enum(['done', 'already', 'dry-run', 'blocked', 'failed', 'skipped']),
    message: z.string().max(512).optional(),
  })
  .strict();
export type RemediationStep = z.infer<typeof RemediationStepSchema>;

export const RemediationDetailSchema = z
  .object({
    ...actorBase,
    /** Stable key of the incident: node, GPU and fault, so every event about it can be grouped. */
    incident: z.string().min(1).max(300),
    trigger: z
      .object({
        eventId: EventId,
        detailType: z.string().min(1).max(128),
        node: NodeName,
        gpuUuid: GpuUuid.optional(),
        xid: count().optional(),
        condition: z.enum(HEALTH_CONDITIONS).optional(),
        observedAt: Timestamp,
      })
      .strict(),
    action: z.enum([...REMEDIATION_ACTIONS, 'restore']),
    /** The remediation policy's profile whose rule decided (docs/remediation.md "Profiles"); absent: none did. */
    profile: z
      .string()
      .regex(/^[a-z0-9]([-a-z0-9._]{0,61}[a-z0-9])?$/)
      .optional(),
    phase: z.enum(REMEDIATION_PHASES),
    scope: z.enum(['mig-instance', 'gpu', 'node']),
    target: z
      .object({
        node: NodeName,
        gpus: z.array(GpuUuid).max(16),
        migInstances: z
          .array(z.object({ gpuUuid: GpuUuid, gpuInstanceId: count(), computeInstanceId: count().optional() }).strict())
          .max(56)
          .optional(),
        pods: z.array(z.object({ namespace: z.string().min(1), name: z.string().min(1) }).strict()).max(512),
      })
      .strict(),
    steps: z.array(RemediationStepSchema).max(600),
    reason: z.string().min(1).max(2048),
    dryRun: z.boolean(),
  })
  .strict();
export type RemediationDetail = z.infer<typeof RemediationDetailSchema>;
