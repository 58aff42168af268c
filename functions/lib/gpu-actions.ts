/**
 * The GPU-action channel to the node agents (ARCHITECTURE.md "The kernel and its clients"; the protocol:
 * docs/architecture.md "GPU actions: the protocol"; the wire: events/catalog/gpu-action.ts).
 *
 * A reflex asks a node's agent to act on a GPU by putting its GPU actions in its plan's node edit
 * (`NodeEdit.gpuActions`: the owner and the whole set it wants on that node now). The one applier
 * (apply.ts) merges that set into the node's request annotation against the node as read, replacing
 * only that owner's entries (every other owner's stay, as they were), and sends it in the node's one
 * patch with the read's resourceVersion: a node written since is a 409, never a lost entry. The answers
 * come back through `readGpuAnswers` (the results annotation, by owner) and `isAnswerFor` (the event).
 */
import {
  GPU_ACTION_OWNERS,
  GPU_ACTION_RESULTS_ANNOTATION,
  GPU_ACTIONS_ANNOTATION,
  GpuActionRequestSchema,
  GpuActionStatesSchema,
  gpuActionKey,
  LEGACY_GPU_ACTION_OWNER,
  type DcgmDiagLevel,
  type GpuActionKind,
  type GpuActionOwner,
  type GpuActionRequest,
  type GpuActionResultDetail,
  type GpuActionState,
} from '../../events/index.ts';
import * as z from 'zod';

export type { GpuActionOwner };

/** One GPU action a reflex asks of a node's agent. */
export interface GpuAction {
  /** Deterministic within its owner, so a redelivered plan asks for the same thing. */
  id: string;
  /** The GPU's UUID. */
  gpu: string;
  action: GpuActionKind;
  /** What the action serves (an incident, a layout change): the timeline's and the answer's reference. */
  incident: string;
  requestedAt: string;
  /** The agent fails the action `timeout` when it cannot finish within this. */
  timeoutSeconds: number;
  /** probe only: how long the counters must stay still, in seconds. */
  probeSeconds?: number;
  /** probe only: DCGM's diagnostic at this run level must pass as well (`dcgmi diag -r N`). */
  diag?: DcgmDiagLevel;
}

/**
 * An owner's GPU actions on one node: the whole set it wants there now. An action of the owner the
 * node carries and the set does not name is withdrawn (the agent then forgets its answer); an empty
 * set withdraws them all. Another owner's actions are never touched.
 */
export interface GpuActionSet {
  owner: GpuActionOwner;
  actions: GpuAction[];
}

/** The most requests the agent reads from one node (GpuActionRequestsSchema). */
export const MAX_GPU_ACTIONS = 64;

const ownerOf = (r: { owner?: string | undefined }): string => r.owner ?? LEGACY_GPU_ACTION_OWNER;

/**
 * The wire form of an action. The legacy owner's requests carry no `owner` and keep the key order they
 * always had, so a node only remediation asks of reads byte for byte as before owners.
 */
export function toRequest(owner: GpuActionOwner, a: GpuAction): GpuActionRequest {
  return {
    gpuUuid: a.gpu,
    incident: a.incident,
    timeoutSeconds: a.timeoutSeconds,
    id: a.id,
    action: a.action,
    requestedAt: a.requestedAt,
    ...(a.probeSeconds !== undefined ? { probeSeconds: a.probeSeconds } : {}),
    ...(a.diag !== undefined ? { diag: a.diag } : {}),
    ...(owner === LEGACY_GPU_ACTION_OWNER ? {} : { owner }),
  };
}

/**
 * The requests on the node: each parsed, beside the entry exactly as its owner wrote it (kept as written
 * when merged, so a node that already carries a set reads as carrying it). Entries off the contract are dropped.
 */
function readEntries(raw: string | undefined): { request: GpuActionRequest; written: unknown }[] {
  if (raw === undefined) return [];
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    return [];
  }
  if (!Array.isArray(json)) return [];
  return json.flatMap((written: unknown) => {
    const r = GpuActionRequestSchema.safeParse(written);
    return r.success ? [{ request: r.data, written }] : [];
  });
}

/** The requests on the node, every owner's; entries that break the contract are dropped. */
export function readRequests(raw: string | undefined): GpuActionRequest[] {
  return readEntries(raw).map((e) => e.request);
}

/** Owners in GPU_ACTION_OWNERS order (the agent's precedence), then any other by name. */
function rank(owner: string): [number, string] {
  const i = (GPU_ACTION_OWNERS as readonly string[]).indexOf(owner);
  return [i < 0 ? GPU_ACTION_OWNERS.length : i, owner];
}

/**
 * The request annotation's value once `set` is merged into `raw` (what the node carries now): the other
 * owners' entries as they are, this owner's replaced by `set`, grouped by owner in precedence order.
 * `null`: nothing left (the annotation is removed). Throws when the node would carry more than the agent reads.
 */
export function mergeGpuActions(raw: string | undefined, set: GpuActionSet, node: string): string | null {
  const others = readEntries(raw).filter((e) => ownerOf(e.request) !== set.owner);
  const mine = set.actions.map((a) => toRequest(set.owner, a));
  // One entry off the contract makes the agent refuse the whole annotation, every owner's: checked here.
  for (const r of mine) {
    const ok = GpuActionRequestSchema.safeParse(r);
    if (!ok.success)
      throw new Error(
        `GPU action ${r.id} of ${set.owner} for node ${node} breaks the contract ` +
          `(${z.prettifyError(ok.error).split('\n').join(' ')}): nothing written`,
      );
  }
  const all = [...others, ...mine.map((r) => ({ request: r, written: r as unknown }))];
  if (all.length > MAX_GPU_ACTIONS)
    throw new Error(
      `node ${node} would carry ${all.length} GPU actions (${set.owner}: ${set.actions.length}), ` +
        `more than the ${MAX_GPU_ACTIONS} its agent reads: nothing written`,
    );
  // A stable sort: each owner's entries keep the order their owner gave.
  const sorted = all
    .map((e, i) => ({ e, i, k: rank(ownerOf(e.request)) }))
    .sort((a, b) => a.k[0] - b.k[0] || (a.k[1] < b.k[1] ? -1 : a.k[1] > b.k[1] ? 1 : 0) || a.i - b.i)
    .map((x) => x.e.written);
  return sorted.length > 0 ? JSON.stringify(sorted) : null;
}

/** Whether the node's request annotation already reads as `set` merged into it (nothing to write). */
export function carriesGpuActions(
  annotations: Readonly<Record<string, string>>,
  set: GpuActionSet,
  node: string,
): boolean {
  const raw = annotations[GPU_ACTIONS_ANNOTATION];
  return mergeGpuActions(raw, set, node) === (raw ?? null);
}

/** The actions the node carries for `owner` (for a planner that diffs against them). */
export function carriedGpuActions(annotations: Readonly<Record<string, string>>, owner: GpuActionOwner): GpuAction[] {
  return readRequests(annotations[GPU_ACTIONS_ANNOTATION])
    .filter((r) => ownerOf(r) === owner)
    .map((r) => ({
      id: r.id,
      gpu: r.gpuUuid,
      action: r.action,
      incident: r.incident,
      requestedAt: r.requestedAt,
      timeoutSeconds: r.timeoutSeconds,
      ...(r.probeSeconds !== undefined ? { probeSeconds: r.probeSeconds } : {}),
      ...(r.diag !== undefined ? { diag: r.diag } : {}),
    }));
}

/**
 * The agent's answers to `owner`'s requests, by the request's own id (the one result path: no owner
 * reads another's). A corrupt annotation reads as no answers, with a warning.
 */
export function readGpuAnswers(
  annotations: Readonly<Record<string, string>>,
  owner: GpuActionOwner,
): { results: Record<string, GpuActionState>; warning?: string } {
  const raw = annotations[GPU_ACTION_RESULTS_ANNOTATION];
  if (raw === undefined) return { results: {} };
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    return { results: {}, warning: `${GPU_ACTION_RESULTS_ANNOTATION} is not JSON: ignoring the agent's answers` };
  }
  const parsed = GpuActionStatesSchema.safeParse(json);
  if (!parsed.success)
    return {
      results: {},
      warning:
        `${GPU_ACTION_RESULTS_ANNOTATION} does not match the contract ` +
        `(${z.prettifyError(parsed.error).split('\n')[0]}): ignoring the agent's answers`,
    };
  const results: Record<string, GpuActionState> = {};
  const prefix = gpuActionKey(owner, '');
  for (const [key, state] of Object.entries(parsed.data)) {
    if (ownerOf(state) !== owner) continue;
    // The key says the same owner (gpuActionKey): an answer filed under another's key is not ours.
    if (!key.startsWith(prefix)) continue;
    results[key.slice(prefix.length)] = state;
  }
  return { results };
}

/** Whether a `GPU Action Result` answers `owner`'s request (absent owner: the legacy one's). */
export function isAnswerFor(detail: Pick<GpuActionResultDetail, 'owner'>, owner: GpuActionOwner): boolean {
  return ownerOf(detail) === owner;
}
