/**
 * The actuator's requests and answers as they travel on the Node (events/catalog/gpu-action.ts is the
 * contract): the requests annotation and the results annotation parsed (one that does not match the
 * contract is nothing to do), each answer's key by owner, and the `GPU Action Result` it publishes.
 */
import {
  GPU_ACTIONS_ANNOTATION,
  GpuActionRequestsSchema,
  GpuActionStatesSchema,
  gpuActionKey,
  LEGACY_GPU_ACTION_OWNER,
  SCHEMA_VERSION,
  type GpuActionRequest,
  type GpuActionResultDetail,
  type GpuActionState,
} from '../../events/index.ts';
import type { ActuatorOptions, Holders } from './options.ts';

export const ownerOf = (r: { owner?: string | undefined }): string => r.owner ?? LEGACY_GPU_ACTION_OWNER;
export const keyOf = (r: GpuActionRequest): string => gpuActionKey(r.owner, r.id);

export function parseRequests(raw: string | undefined, log: (why: string) => void): GpuActionRequest[] {
  if (raw === undefined) return [];
  try {
    const parsed = GpuActionRequestsSchema.safeParse(JSON.parse(raw));
    if (parsed.success) return parsed.data;
    log(
      `${GPU_ACTIONS_ANNOTATION} does not match the contract: ${parsed.error.issues[0]?.message ?? 'invalid'}; ` +
        `nothing done`,
    );
  } catch {
    log(`${GPU_ACTIONS_ANNOTATION} is not JSON: nothing done`);
  }
  return [];
}

export function parseResults(raw: string | undefined): Record<string, GpuActionState> {
  if (raw === undefined) return {};
  try {
    const parsed = GpuActionStatesSchema.safeParse(JSON.parse(raw));
    return parsed.success ? { ...parsed.data } : {};
  } catch {
    return {};
  }
}

/**
 * The results annotation already says `after`: as written, or as the contract reads it (the same answers in
 * another key order — the parser's — are no reason for another API call).
 */
export function sameResults(raw: string | undefined, after: string): boolean {
  if (after === (raw ?? '{}')) return true;
  try {
    const parsed = GpuActionStatesSchema.safeParse(JSON.parse(raw ?? '{}'));
    return parsed.success && JSON.stringify(parsed.data) === after;
  } catch {
    return false;
  }
}

/** `again`: a later answer to the same request (a fence written back), under its own event id. */
export function resultDetail(
  o: Pick<ActuatorOptions, 'node' | 'dryRun'>,
  r: GpuActionRequest,
  s: GpuActionState,
  again?: string,
): GpuActionResultDetail {
  const owner = s.owner;
  return {
    schemaVersion: SCHEMA_VERSION,
    eventId: `gpu-action:${o.node}:${r.id}:${s.state}${again ? `:${again}` : ''}`.slice(0, 128),
    node: o.node,
    observedAt: s.at,
    // The owner's own id (r.id is the key here: `<owner>:<id>` but for the legacy owner).
    requestId: owner === undefined ? r.id : r.id.slice(owner.length + 1),
    incident: r.incident,
    action: r.action,
    gpuUuid: r.gpuUuid,
    state: s.state === 'failed' ? 'failed' : 'done',
    ...(s.reason ? { reason: s.reason } : {}),
    ...(s.holders ? { holders: s.holders } : {}),
    ...(s.probe ? { probe: s.probe } : {}),
    ...(s.fence ? { fence: s.fence } : {}),
    dryRun: o.dryRun === true,
    ...(owner === undefined ? {} : { owner }),
  };
}

/**
 * A reset or drain refused: `busy` naming what holds the GPU, or `processes unknown` when NVML could not say
 * (options.ts Holders: unknown is never "nothing holds it"); undefined when nothing does.
 */
export function heldBy(
  base: Pick<GpuActionState, 'action' | 'gpuUuid' | 'at'>,
  holders: Holders,
  what: string,
): GpuActionState | undefined {
  if (!Array.isArray(holders))
    return { ...base, state: 'failed', reason: `processes unknown: ${holders.unknown}; ${what}`.slice(0, 512) };
  return holders.length > 0 ? { ...base, state: 'failed', reason: 'busy', holders: holders.slice(0, 64) } : undefined;
}
