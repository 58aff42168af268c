/**
 * GPU actions: what the functions ask one node's agent to do to one GPU, and what the agent
 * answers (example: ./gpu-action-result.example.json).
 *
 * The functions cannot touch a GPU: fencing through a node-local file, NVML drain state, a reset
 * and the post-reset health probe happen on the node. So the functions write requests into an
 * annotation on the Node (`GPU_ACTIONS_ANNOTATION`, a JSON array of `GpuActionRequest`), the agent
 * watches its own Node, carries each request out once (idempotent by `id`), writes the state back
 * into `GPU_ACTION_RESULTS_ANNOTATION` (a JSON object `id → GpuActionState`) and publishes a
 * `GPU Action Result` event when a request reaches `done` or `failed`. Each side writes only its
 * own annotation (a JSON merge patch of that key), so neither overwrites the other.
 *
 * Owners (docs/architecture.md "GPU actions: the protocol"): several reflexes ask one node's agent for
 * GPU actions through the same annotation. Each request names its `owner` (absent: `remediate`, the
 * format before owners, still read by both sides); the functions' one applier (functions/lib/gpu-actions.ts)
 * replaces only its owner's entries, never another's, and the agent answers each request under
 * `gpuActionKey(owner, id)`, with the owner on the answer and on the event, so each answer reaches its owner.
 */
import * as z from 'zod';
import { agentBase, count, EventId, GpuUuid, PciBusId, Timestamp } from '../common.ts';

export const GPU_ACTION_RESULT = 'GPU Action Result';

/** Node annotation the functions write: the requested actions (JSON array of GpuActionRequest). */
export const GPU_ACTIONS_ANNOTATION = 'gpu-reflex.io/gpu-actions';
/** Node annotation the agent writes: each request's state (JSON object id → GpuActionState). */
export const GPU_ACTION_RESULTS_ANNOTATION = 'gpu-reflex.io/gpu-action-results';

export const GPU_ACTIONS = [
  'fence', // add the GPU to the node-local fence file (ACK device plugin's unhealthyDevices.json)
  'unfence', // remove it from that file (only entries the agent added)
  'drain-on', // NVML drain state on (nvidia-smi drain -p <pci> -m 1): new work cannot open the GPU
  'drain-off', // NVML drain state off
  'reset', // GPU reset (nvidia-smi --gpu-reset -i <uuid>); refused while processes hold the GPU
  // after a reset, a reboot or a person's repair: NVML answers, the GPU counted, recovery action none, no remap
  // pending/failed, no XID, counters still
  'probe',
  'mig-cleanup', // destroy the GPU's MIG compute and GPU instances (before a reset of a MIG GPU)
] as const;
export type GpuActionKind = (typeof GPU_ACTIONS)[number];

/**
 * The reflexes that ask the agent for GPU actions, in the agent's order of precedence (when two owners ask
 * for one GPU in the same pass, the earlier owner's request goes first). A new reflex adds its name here.
 * MIG is not one: mig-manager changes the layouts, and the evidence the rebalancer needs (each GPU's
 * instances and whether a process runs in each) is the MIG inventory the agent writes from NVML on its own
 * (docs/architecture.md "GPU actions: the protocol").
 */
export const GPU_ACTION_OWNERS = ['remediate'] as const;
export type GpuActionOwner = (typeof GPU_ACTION_OWNERS)[number];
/** The owner of a request or answer written without one (the format before owners). */
export const LEGACY_GPU_ACTION_OWNER: GpuActionOwner = 'remediate';
/**
 * On the wire any owner name is accepted (an agent older than a new reflex still carries its requests out);
 * the functions type it by GPU_ACTION_OWNERS.
 */
export const GpuActionOwnerName = z
  .string()
  .regex(/^[a-z][a-z0-9-]{0,30}$/, 'expected an owner name like remediate or thermal (lowercase, digits, "-")');

/**
 * The key a request's answer is kept under in the results annotation: the request id for the legacy owner
 * (as before owners), `<owner>:<id>` for any other, so two owners' ids never meet.
 */
export function gpuActionKey(owner: string | undefined, id: string): string {
  return owner === undefined || owner === LEGACY_GPU_ACTION_OWNER ? id : `${owner}:${id}`;
}

export const GPU_ACTION_STATES = ['requested', 'running', 'done', 'failed'] as const;
export type GpuActionStateName = (typeof GPU_ACTION_STATES)[number];

/** `dcgmi diag -r` run levels a probe may ask for (NVIDIA DCGM user guide, "DCGM Diagnostics": levels 1–3). */
export const DcgmDiagLevel = z.union([z.literal(1), z.literal(2), z.literal(3)]);
export type DcgmDiagLevel = z.infer<typeof DcgmDiagLevel>;

/** One request in the node's `gpu-reflex.io/gpu-actions` annotation. */
export const GpuActionRequestSchema = z
  .object({
    /** Deterministic (incident + action + attempt), so a redelivered plan asks for the same thing. */
    id: EventId,
    action: z.enum(GPU_ACTIONS),
    gpuUuid: GpuUuid,
    /** NVML index and PCI bus id as the inventory last reported them (the agent re-resolves by UUID). */
    index: count().optional(),
    pciBusId: PciBusId.optional(),
    /** The incident this serves (Remediation `incident`), for the timeline and the result event. */
    incident: z.string().min(1).max(300),
    requestedAt: Timestamp,
    /** The agent fails the request with reason `timeout` when it cannot finish within this. */
    timeoutSeconds: count().max(86_400),
    /** probe only: how long the counters must stay still after the reset, in seconds. */
    probeSeconds: count().max(3600).optional(),
    /**
     * probe only: DCGM's diagnostic at this run level (`dcgmi diag -r N` on the GPU: 1 quick deployment checks,
     * 2 a few minutes, 3 about half an hour; NVIDIA DCGM user guide, "DCGM Diagnostics") must pass as well. Absent:
     * no diagnostic is run.
     */
    diag: DcgmDiagLevel.optional(),
    /** The reflex that asked (GPU_ACTION_OWNERS); absent: `remediate`, which writes none (the format before owners). */
    owner: GpuActionOwnerName.optional(),
  })
  .strict();
export type GpuActionRequest = z.infer<typeof GpuActionRequestSchema>;
export const GpuActionRequestsSchema = z.array(GpuActionRequestSchema).max(64);

/**
 * What DCGM's diagnostic said of the GPU (asked by a probe's `diag`). `pass`: at least one test passed on the GPU
 * and none failed or warned (skipped and not-run tests say nothing either way); `fail`: one did (`failed` names
 * them); `unavailable`: no verdict — dcgmi is not installed, the host engine did not answer, the run timed out or
 * its output was not DCGM's JSON (`reason`). Only `pass` passes: unknown is never healthy.
 */
export const GpuDiagSchema = z
  .object({
    level: DcgmDiagLevel,
    result: z.enum(['pass', 'fail', 'unavailable']),
    failed: z.array(z.string().min(1).max(128)).max(32),
    reason: z.string().max(512).optional(),
  })
  .strict();
export type GpuDiag = z.infer<typeof GpuDiagSchema>;

/** What the probe found: every field is evidence a restore is decided on. */
export const GpuProbeSchema = z
  .object({
    nvmlAnswers: z.boolean(),
    recoveryAction: z.string().min(1).max(32),
    remapPending: z.boolean(),
    remapFailed: z.boolean(),
    /** Uncorrected ECC and XID counts that moved during the probe window (both 0 to pass). */
    eccUncorrectedDelta: count(),
    /** The XIDs the agent saw on this GPU during the probe window (none to pass). */
    xidsDuringProbe: z.array(count()).max(64),
    /**
     * NVML enumerates the GPU under its UUID (a GPU missing after a reboot is not counted; absent: not checked, which
     * never passes).
     */
    counted: z.boolean().optional(),
    /** DCGM's diagnostic, when the request asked for one (absent: not run; where one was asked, that never passes). */
    diag: GpuDiagSchema.optional(),
    passed: z.boolean(),
  })
  .strict();
export type GpuProbe = z.infer<typeof GpuProbeSchema>;

/**
 * What a running probe has watched so far, on its `running` answer: an agent that restarts (a rolling update, an
 * OOM kill) resumes the probe from it instead of starting the window over with a new baseline, which would forget
 * an error seen before the restart. Written when it changes (a new XID), not at every tick.
 */
export const GpuProbeWatchSchema = z
  .object({
    /** When the probe began watching (its XIDs count from then). */
    since: Timestamp,
    /** The GPU's aggregate uncorrected ECC count then; a lower count later means the counter was reset. */
    eccBaseline: count(),
    /** The XIDs seen on the GPU since then, oldest first. */
    xids: z.array(count()).max(64),
  })
  .strict();
export type GpuProbeWatch = z.infer<typeof GpuProbeWatchSchema>;

/**
 * What a fence looks like on the node, by identity (issue #27): the agent reads the fence file before
 * it adds the GPU, and again on every tick while the fence is asked for. A fence is held only while
 * the file lists this GPU; entries other writers put there (ACK's own isolation, a person) are named,
 * so another device already out never passes for ours.
 */
export const GpuFenceEvidenceSchema = z
  .object({
    /** The file lists this GPU now (by its UUID or its index). */
    listed: z.boolean(),
    /** Entries the file held before the agent added this GPU, not the agent's own: `GPU-…` or `index:N`. */
    before: z.array(z.string().min(1).max(96)).max(64),
    /** Times the agent found this GPU gone from the file (another writer rewrote it) and wrote it back. */
    restored: count().optional(),
    /** When it last did. */
    restoredAt: Timestamp.optional(),
    /**
     * GPU devices (every `nvidia.com/` resource) the agent's own Node counted allocatable when this
     * answer was last written. The agent answers again when that count changes while it holds the fence:
     * the functions' prompt to verify the fence at once rather than at the next sweep (absent: not read).
     */
    allocatable: count().optional(),
  })
  .strict();
export type GpuFenceEvidence = z.infer<typeof GpuFenceEvidenceSchema>;

/** One entry of the node's `gpu-reflex.io/gpu-action-results` annotation. */
export const GpuActionStateSchema = z
  .object({
    state: z.enum(GPU_ACTION_STATES),
    action: z.enum(GPU_ACTIONS),
    gpuUuid: GpuUuid,
    at: Timestamp,
    /** failed: why (`timeout`, `busy`, `not-supported`, `nvml: …`), done: what happened, in words. */
    reason: z.string().max(512).optional(),
    /** reset refused as `busy`: the pods (namespace/name) or pids still holding the GPU. */
    holders: z.array(z.string().min(1).max(300)).max(64).optional(),
    probe: GpuProbeSchema.optional(),
    /** fence only: what the file says (GpuFenceEvidenceSchema). */
    fence: GpuFenceEvidenceSchema.optional(),
    /**
     * probe only, while `running`: the evidence so far (GpuProbeWatchSchema). Absent on a running probe: written by
     * an agent older than this field, whose evidence a restarted agent cannot vouch for.
     */
    watch: GpuProbeWatchSchema.optional(),
    /** The request's owner, as it asked; absent for `remediate` (the format before owners). */
    owner: GpuActionOwnerName.optional(),
  })
  .strict();
export type GpuActionState = z.infer<typeof GpuActionStateSchema>;
/** A results key: a request id, or `<owner>:<id>` (gpuActionKey), so up to an owner name longer than an id. */
const GpuActionKeySchema = z
  .string()
  .min(8)
  .max(160)
  .regex(/^[A-Za-z0-9._:-]+$/, 'expected a request id, or <owner>:<id>');
export const GpuActionStatesSchema = z.record(GpuActionKeySchema, GpuActionStateSchema);

/** `GPU Action Result` — an agent finished (done or failed) one requested GPU action. */
export const GpuActionResultDetailSchema = z
  .object({
    ...agentBase,
    requestId: EventId,
    incident: z.string().min(1).max(300),
    action: z.enum(GPU_ACTIONS),
    gpuUuid: GpuUuid,
    state: z.enum(['done', 'failed']),
    reason: z.string().max(512).optional(),
    holders: z.array(z.string().min(1).max(300)).max(64).optional(),
    probe: GpuProbeSchema.optional(),
    fence: GpuFenceEvidenceSchema.optional(),
    /** Whether the agent ran with --dry-run (it then did nothing to the GPU and says so). */
    dryRun: z.boolean(),
    /**
     * Whose request this answers (absent: `remediate`): each owner's rule on the bus matches its own
     * (events/patterns/gpu-action.json is remediate's), so an answer reaches only its owner.
     */
    owner: GpuActionOwnerName.optional(),
  })
  .strict();
export type GpuActionResultDetail = z.infer<typeof GpuActionResultDetailSchema>;
