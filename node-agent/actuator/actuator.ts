/**
 * The agent's other half: GPU actions the functions ask of this node (events/catalog/gpu-action.ts
 * is the contract). The functions write requests into the Node annotation
 * `gpu-reflex.io/gpu-actions`; on every tick the actuator reads its own Node, carries out each
 * request it has not answered yet — once, by id — and writes the state back into
 * `gpu-reflex.io/gpu-action-results` (a merge patch of that one key), then publishes a
 * `GPU Action Result` for each request that reached done or failed.
 *
 *   fence / unfence — the device plugin's unhealthy-devices file (FenceFile: entries it did not add are never removed);
 *                     a done fence is held: every tick the file must still list the GPU, else it is written back
 *                     (fence-hold.ts)
 *   reset           — refused (`busy`, naming what holds it) while processes use the GPU; else the GPU reset
 *                     (opt-in: the GPU Operator's clients paused and restored around it, operator-pause.ts)
 *   probe           — after `probeSeconds` of watching: NVML answers and still enumerates the GPU under
 *                     its UUID (counted), recovery action none (unknown is not none), no row remap
 *                     pending or failed, no new uncorrected ECC error and no XID on it since the probe began
 *   drain-on/off    — NVML drain state (refused `busy` while processes use the GPU, to turn it on)
 *   mig-cleanup     — answered `failed: not-supported` (not built yet; a reset destroys the instances anyway)
 *
 * Owners (docs/architecture.md "GPU actions: the protocol"): each request names the reflex that asked
 * (`owner`; absent: remediate, the format before owners, read the same). Its answer is kept under
 * `gpuActionKey(owner, id)` and carries the owner, on the Node and in the event, so it reaches that owner
 * only; requests run in the annotation's order (owners in precedence order), one per GPU at a time; an
 * unfence leaves the GPU listed while another owner's fence of it stands.
 *
 * A request older than its `timeoutSeconds` that could not finish fails `timeout`. `dryRun`: nothing
 * is done to a GPU, a file or the Node; every request is answered once, in the event only, done with
 * "dry run: …", and the events say so.
 * Time is the injected clock (the one clock), so a probe window passes in virtual time under simulate.
 */
import {
  GPU_ACTION_RESULT,
  GPU_ACTION_RESULTS_ANNOTATION,
  GPU_DEVICES_ANNOTATION,
  GPU_DEVICES_RECONFIRM_MS,
  GPU_ACTIONS_ANNOTATION,
  GpuActionRequestsSchema,
  GpuActionStatesSchema,
  gpuActionKey,
  LEGACY_GPU_ACTION_OWNER,
  MIG_INVENTORY_ANNOTATION,
  readGpuDevices,
  readMigInventory,
  SCHEMA_VERSION,
  type DcgmDiagLevel,
  type GpuActionRequest,
  type GpuActionResultDetail,
  type GpuActionState,
  type GpuDevices,
  type GpuDiag,
  type GpuProbe,
  type MigInventory,
} from '../../events/index.ts';
import { allocatableSeen, fenceOnce, holdFence } from './fence-hold.ts';
import type { OperatorPause } from './operator-pause.ts';

/** This node's Node object, as far as the actuator needs it (RBAC: nodes get, patch — its own). */
export interface ActuatorNode {
  annotations(): Promise<Record<string, string>>;
  /** Merge-patches the results annotation (only that key). */
  writeResults(json: string): Promise<void>;
  /** Merge-patches the MIG inventory annotation (only that key). */
  writeMigInventory?(json: string): Promise<void>;
  /** Merge-patches the allocatable-devices annotation (only that key; events/gpu-devices.ts). */
  writeGpuDevices?(json: string): Promise<void>;
  /**
   * GPU devices (every `nvidia.com/` resource) the Node counted allocatable at the last
   * `annotations()` read, the same GET; undefined when not read. A held fence answers again when it
   * changes (fence-hold.ts allocatableSeen).
   */
  gpuAllocatable?(): number | undefined;
}

export interface GpuHealthReading {
  nvmlAnswers: boolean;
  recoveryAction: string;
  remapPending: boolean;
  remapFailed: boolean;
  /** Aggregate uncorrected ECC errors (a reset clears the volatile count, not this one). */
  eccUncorrected: number;
}

/** The GPUs, by UUID (RBAC-free: NVML and the reset tool on this node). */
export interface ActuatorGpus {
  /** NVML index of the GPU, undefined when NVML does not know it. */
  indexOf(uuid: string): number | undefined;
  /** What holds the GPU now (pods `namespace/name`, or `pid N`): a reset waits for none. */
  holders(uuid: string): string[];
  /** Asynchronous: a reset takes seconds, and the agent keeps watching the other GPUs meanwhile. */
  reset(uuid: string): Promise<{ ok: true } | { ok: false; reason: string }>;
  health(uuid: string): GpuHealthReading;
  /** NVML drain state on or off (`nvidia-smi drain -p <pci> -m 1|0`); absent: not supported here. */
  drain?(uuid: string, on: boolean): { ok: true } | { ok: false; reason: string };
}

/** The device plugin's unhealthy-devices file, keeping its own record of what it added. */
export interface FenceFileOps {
  /** What the file lists now (`{"index": [...], "uuid": [...]}`; missing or unreadable: nothing). */
  read(): { index: string[]; uuid: string[] };
  /** The UUIDs the agent added (its own record). */
  ours(): string[];
  /** Lists the GPU (idempotent). Throws when the file cannot be written. */
  add(uuid: string, index: number | undefined): void;
  /** Removes an entry it added; false when the entry was not its own (left alone). */
  remove(uuid: string): boolean;
}

export interface ActuatorOptions {
  node: string;
  nodeApi: ActuatorNode;
  gpus: ActuatorGpus;
  fence: FenceFileOps;
  publish: (detailType: string, detail: GpuActionResultDetail) => Promise<void>;
  now: () => number;
  dryRun?: boolean;
  log?: (line: string) => void;
  /**
   * Each GPU's device IDs the kubelet counts allocatable (PodResources GetAllocatableResources), read each
   * tick and written to the Node when it changes (events/gpu-devices.ts): a fence under NVIDIA's plugin
   * is verified by it. Absent: not written (unknown to the functions).
   */
  devices?: () => Promise<{ known: true; gpus: Record<string, string[]> } | { known: false; reason: string }>;
  /** The XIDs the agent published for a GPU at or after a time (ms): the probe window's (agent.ts xidsSince). */
  xids: (gpuUuid: string, sinceMs: number) => number[];
  /**
   * DCGM's diagnostic on the GPU at an index (dcgm-diag.ts runDcgmDiag), for a probe that asks `diag`. Absent: a
   * probe that asks gets `unavailable` (never a pass).
   */
  diag?: (index: number, level: DcgmDiagLevel) => Promise<GpuDiag>;
  /** This node's MIG GPUs as NVML sees them now (no MIG GPU: an empty list); written to the Node when it changes. */
  migInventory?: () => Omit<MigInventory, 'at' | 'v'>['gpus'];
  /**
   * Opt-in (GPU_RESET_PAUSE_OPERATOR): a reset pauses the GPU Operator's clients on the node first and
   * restores them after (operator-pause.ts). Absent: the reset runs with them in place.
   */
  pause?: OperatorPause;
}

interface Probing {
  startedAt: number;
  baseline: number;
  /** The DCGM diagnostic the probe asked for: under way, then its verdict (it runs for minutes: never awaited). */
  diag?: { verdict?: GpuDiag };
}

export class GpuActuator {
  /** Probes under way (in memory: a restarted agent starts a probe over). */
  private readonly probing = new Map<string, Probing>();
  /** Dry run writes nothing to the Node: what it answered is remembered here instead. */
  private readonly dryAnswered = new Set<string>();

  constructor(private readonly o: ActuatorOptions) {}

  /** Starts the probe's diagnostic; its verdict lands on `p` (a later tick reads it). Never throws. */
  private startDiag(id: string, p: Probing, index: number | undefined, level: DcgmDiagLevel): void {
    const run = this.o.diag;
    p.diag = {};
    this.probing.set(id, p);
    const verdict: Promise<GpuDiag> =
      index === undefined
        ? Promise.resolve({ level, result: 'unavailable', failed: [], reason: 'NVML does not list the GPU' })
        : run
          ? run(index, level).catch((err: unknown) => ({
              level,
              result: 'unavailable' as const,
              failed: [],
              reason: `dcgmi: ${err instanceof Error ? err.message : String(err)}`.slice(0, 512),
            }))
          : Promise.resolve({ level, result: 'unavailable', failed: [], reason: 'this agent runs no DCGM diagnostic' });
    void verdict.then((v) => {
      p.diag = { verdict: v };
      this.o.log?.(
        `DCGM diagnostic level ${level} of GPU ${index ?? '?'}: ${v.result}${v.reason ? ` (${v.reason})` : ''}`,
      );
    });
  }

  /** One pass over the requests; returns the requests answered (done or failed) this pass. */
  async tick(): Promise<GpuActionResultDetail[]> {
    const annotations = await this.o.nodeApi.annotations();
    const allocatable = this.o.nodeApi.gpuAllocatable?.();
    const requests = parseRequests(annotations[GPU_ACTIONS_ANNOTATION], (why) => this.o.log?.(why));
    const before = annotations[GPU_ACTION_RESULTS_ANNOTATION];
    const results = parseResults(before);
    const answered: GpuActionResultDetail[] = [];
    // Each answer under its owner's key (gpuActionKey): two owners' ids never meet.
    const wanted = new Set(requests.map(keyOf));
    // Forget answers nobody asks about any more: the annotation stays small.
    for (const id of Object.keys(results)) if (!wanted.has(id)) delete results[id];
    for (const id of this.probing.keys()) if (!wanted.has(id)) this.probing.delete(id);
    // One action per GPU at a time: requests in order, a GPU busy with one waits for the next tick.
    const busy = new Set<string>();
    for (const r0 of requests) {
      // From here on the request goes by its key: the legacy owner's is its id, as before owners.
      const r = { ...r0, id: keyOf(r0) };
      const prior = results[r.id];
      // A fence is held, not done once: every tick the file must still list the GPU (fence-hold.ts).
      if (r.action === 'fence' && prior?.state === 'done' && !this.o.dryRun) {
        const held = holdFence(
          this.o.fence,
          r,
          prior,
          this.o.gpus.indexOf(r.gpuUuid),
          new Date(this.o.now()).toISOString(),
        );
        if (held) {
          results[r.id] = held;
          answered.push(this.detail(r, held, `restored-${held.fence?.restored ?? 0}`));
          this.o.log?.(
            `gpu action ${r.id}: fence of ${r.gpuUuid} found gone from the fence file: ${held.reason ?? ''}`,
          );
          continue;
        }
        // The Node's allocatable changed (the device plugin took the GPU out): said again, so the
        // functions verify the fence now instead of at their next sweep.
        const seen = allocatableSeen(prior, allocatable);
        if (seen) {
          results[r.id] = seen;
          answered.push(this.detail(r, seen, `allocatable-${allocatable}-${this.o.now()}`));
        }
        continue;
      }
      if (prior && (prior.state === 'done' || prior.state === 'failed')) continue;
      if (this.dryAnswered.has(r.id)) continue;
      if (busy.has(r.gpuUuid)) continue;
      const done = await this.carryOut(r, requests);
      // A fence records the Node's allocatable it was answered against (fence-hold.ts allocatableSeen).
      const state =
        r.action === 'fence' && done.fence && allocatable !== undefined && !this.o.dryRun
          ? { ...done, fence: { ...done.fence, allocatable } }
          : done;
      results[r.id] = state;
      if (state.state === 'running') busy.add(r.gpuUuid);
      if (state.state === 'done' || state.state === 'failed') {
        if (this.o.dryRun) this.dryAnswered.add(r.id);
        answered.push(this.detail(r, state));
        this.o.log?.(
          `gpu action ${r.id}: ${r.action} ${r.gpuUuid} ${state.state}${state.reason ? ` (${state.reason})` : ''}`,
        );
      }
    }
    // A pause whose reset is no longer under way (timed out, withdrawn) gets its labels back.
    if (this.o.pause && !this.o.dryRun) {
      const live = new Set(
        Object.entries(results)
          .filter(([, x]) => x.action === 'reset' && x.state === 'running')
          .map(([id]) => id),
      );
      await this.o.pause.settle(annotations, live);
    }
    const after = JSON.stringify(results);
    // A dry run changes nothing in the cluster either: its answers are only printed.
    if (!this.o.dryRun && after !== (before ?? '{}')) await this.o.nodeApi.writeResults(after);
    // Before the events too: an answer prompts the functions to read and update the Node, and a write of
    // ours after their read would fail their update (409) and push the verification to the next sweep.
    await this.writeGpuDevices(annotations[GPU_DEVICES_ANNOTATION]);
    // Written first: the functions read the annotation; the event is the prompt, never the only copy.
    for (const d of answered) await this.o.publish(GPU_ACTION_RESULT, d);
    await this.writeMigInventory(annotations[MIG_INVENTORY_ANNOTATION]);
    return answered;
  }

  /** The allocatable-devices annotation, rewritten only when what it says changed (`at`: when it last did). */
  private async writeGpuDevices(before: string | undefined): Promise<void> {
    if (!this.o.devices || !this.o.nodeApi.writeGpuDevices || this.o.dryRun) return;
    const now = await this.o.devices();
    const prior = readGpuDevices({ [GPU_DEVICES_ANNOTATION]: before ?? '' });
    const said = (d: { known: boolean; reason?: string; gpus?: Record<string, string[]> }) =>
      JSON.stringify([d.known, d.reason ?? '', d.gpus ?? {}]);
    const stamp = new Date(this.o.now()).toISOString();
    if (prior && said(prior) === said(now)) {
      // Unchanged: re-confirmed only while a GPU is out, what a verified fence rests on (events/gpu-devices.ts).
      const out = Object.values(prior.gpus).some((ids) => ids.length === 0);
      const last = Date.parse(prior.checked ?? prior.at);
      if (!out || this.o.now() - last < GPU_DEVICES_RECONFIRM_MS) return;
      await this.o.nodeApi.writeGpuDevices(JSON.stringify({ ...prior, checked: stamp } satisfies GpuDevices));
      return;
    }
    const doc: GpuDevices = {
      v: 1,
      at: stamp,
      checked: stamp,
      known: now.known,
      ...(now.known ? { gpus: now.gpus } : { reason: now.reason, gpus: {} }),
    };
    await this.o.nodeApi.writeGpuDevices(JSON.stringify(doc));
  }

  /**
   * The MIG inventory annotation, rewritten only when what it says changed (its `at` is when it
   * last did). A GPU without MIG is not listed; a node without MIG GPUs gets no annotation. A
   * failure to read NVML is logged and leaves the annotation as it was.
   */
  private async writeMigInventory(before: string | undefined): Promise<void> {
    if (!this.o.migInventory || !this.o.nodeApi.writeMigInventory || this.o.dryRun) return;
    let gpus: MigInventory['gpus'];
    try {
      gpus = this.o.migInventory();
    } catch (err) {
      this.o.log?.(`MIG inventory not read: ${err instanceof Error ? err.message : String(err)}`);
      return;
    }
    if (gpus.length === 0 && before === undefined) return;
    const prior = before === undefined ? undefined : readMigInventory({ [MIG_INVENTORY_ANNOTATION]: before }).inventory;
    if (prior && JSON.stringify(prior.gpus) === JSON.stringify(gpus)) return;
    const inventory: MigInventory = { v: 1, at: new Date(this.o.now()).toISOString(), gpus };
    await this.o.nodeApi.writeMigInventory(JSON.stringify(inventory));
  }

  /** `all`: every request on the Node (an unfence must not undo another owner's fence). */
  private async carryOut(r: GpuActionRequest, all: readonly GpuActionRequest[]): Promise<GpuActionState> {
    const now = this.o.now();
    const at = new Date(now).toISOString();
    const owner = ownerOf(r);
    const base = {
      action: r.action,
      gpuUuid: r.gpuUuid,
      at,
      ...(owner === LEGACY_GPU_ACTION_OWNER ? {} : { owner }),
    };
    // A fence or unfence is never late (the file is what it is); a reset or probe is.
    const timed = r.action === 'reset' || r.action === 'probe';
    if (timed && now - Date.parse(r.requestedAt) > r.timeoutSeconds * 1000)
      return { ...base, state: 'failed', reason: 'timeout' };
    if (this.o.dryRun)
      return { ...base, state: 'done', reason: `dry run: would ${r.action} ${r.gpuUuid}; nothing done` };
    const index = this.o.gpus.indexOf(r.gpuUuid);
    switch (r.action) {
      case 'fence':
        return fenceOnce(this.o.fence, r.gpuUuid, index, base);
      case 'unfence': {
        // The fence file is one per node: another owner's standing fence of this GPU keeps it listed.
        const holds = [...new Set(all.filter((o) => o.action === 'fence' && o.gpuUuid === r.gpuUuid).map(ownerOf))];
        const others = holds.filter((o) => o !== owner);
        if (others.length > 0)
          return { ...base, state: 'done', reason: `left listed: still fenced for ${others.join(', ')}` };
        return {
          ...base,
          state: 'done',
          reason: this.o.fence.remove(r.gpuUuid)
            ? "removed from the device plugin's unhealthy devices"
            : 'not listed by gpu-reflex: left as it was',
        };
      }
      case 'reset': {
        if (index === undefined) return { ...base, state: 'failed', reason: 'NVML does not know this GPU' };
        const holders = this.o.gpus.holders(r.gpuUuid);
        if (holders.length > 0) return { ...base, state: 'failed', reason: 'busy', holders: holders.slice(0, 64) };
        // Opt-in: the GPU Operator's clients paused around the reset, a tick at a time (operator-pause.ts).
        if (this.o.pause) return this.o.pause.step(r, base);
        const done = await this.o.gpus.reset(r.gpuUuid);
        return done.ok
          ? { ...base, state: 'done', reason: 'GPU reset' }
          : { ...base, state: 'failed', reason: done.reason.slice(0, 512) };
      }
      case 'probe': {
        const started = this.probing.get(r.id);
        const reading = this.o.gpus.health(r.gpuUuid);
        if (!started) {
          this.probing.set(r.id, { startedAt: now, baseline: reading.eccUncorrected });
          if ((r.probeSeconds ?? 0) > 0)
            return { ...base, state: 'running', reason: `watching for ${r.probeSeconds} s` };
        }
        const p = started ?? { startedAt: now, baseline: reading.eccUncorrected };
        if (now - p.startedAt < (r.probeSeconds ?? 0) * 1000)
          return { ...base, state: 'running', reason: `watching for ${r.probeSeconds} s` };
        // The window is over: DCGM's diagnostic, where asked, runs now, and the probe ends when it has a verdict.
        if (r.diag !== undefined && !p.diag?.verdict) {
          if (!p.diag) this.startDiag(r.id, p, index, r.diag);
          if (!p.diag?.verdict) return { ...base, state: 'running', reason: `DCGM diagnostic level ${r.diag} running` };
        }
        this.probing.delete(r.id);
        const probe: GpuProbe = {
          nvmlAnswers: reading.nvmlAnswers,
          recoveryAction: reading.recoveryAction,
          remapPending: reading.remapPending,
          remapFailed: reading.remapFailed,
          eccUncorrectedDelta: Math.max(0, reading.eccUncorrected - p.baseline),
          xidsDuringProbe: this.o.xids(r.gpuUuid, p.startedAt).slice(0, 64),
          // NVML still lists the GPU under its UUID: a GPU that did not come back (from a reset or a
          // reboot) is not counted, whatever its last reading said.
          counted: index !== undefined,
          ...(p.diag?.verdict ? { diag: p.diag.verdict } : {}),
          passed: false,
        };
        // Evidence only: every field must say healthy; `unknown` (no field 230) is not `none`.
        probe.passed =
          probe.counted === true &&
          probe.nvmlAnswers &&
          probe.recoveryAction === 'none' &&
          !probe.remapPending &&
          !probe.remapFailed &&
          probe.eccUncorrectedDelta === 0 &&
          probe.xidsDuringProbe.length === 0 &&
          (r.diag === undefined || probe.diag?.result === 'pass');
        return { ...base, state: 'done', probe, reason: probe.passed ? 'probe passed' : 'probe did not pass' };
      }
      case 'drain-on':
      case 'drain-off': {
        if (!this.o.gpus.drain)
          return { ...base, state: 'failed', reason: 'not-supported: this NVML library has no drain state' };
        if (index === undefined) return { ...base, state: 'failed', reason: 'NVML does not know this GPU' };
        const on = r.action === 'drain-on';
        // NVML refuses to drain a GPU in use: say what holds it, as a refused reset does.
        const holders = on ? this.o.gpus.holders(r.gpuUuid) : [];
        if (holders.length > 0) return { ...base, state: 'failed', reason: 'busy', holders: holders.slice(0, 64) };
        const done = this.o.gpus.drain(r.gpuUuid, on);
        return done.ok
          ? {
              ...base,
              state: 'done',
              reason: on ? 'NVML drain state on: the GPU accepts no new work' : 'NVML drain state off',
            }
          : { ...base, state: 'failed', reason: done.reason.slice(0, 512) };
      }
      default:
        return { ...base, state: 'failed', reason: `not-supported: ${r.action} is not built into this agent yet` };
    }
  }

  /** `again`: a later answer to the same request (a fence written back), under its own event id. */
  private detail(r: GpuActionRequest, s: GpuActionState, again?: string): GpuActionResultDetail {
    const owner = s.owner;
    return {
      schemaVersion: SCHEMA_VERSION,
      eventId: `gpu-action:${this.o.node}:${r.id}:${s.state}${again ? `:${again}` : ''}`.slice(0, 128),
      node: this.o.node,
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
      dryRun: this.o.dryRun === true,
      ...(owner === undefined ? {} : { owner }),
    };
  }
}

const ownerOf = (r: { owner?: string | undefined }): string => r.owner ?? LEGACY_GPU_ACTION_OWNER;
const keyOf = (r: GpuActionRequest): string => gpuActionKey(r.owner, r.id);

function parseRequests(raw: string | undefined, log: (why: string) => void): GpuActionRequest[] {
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

function parseResults(raw: string | undefined): Record<string, GpuActionState> {
  if (raw === undefined) return {};
  try {
    const parsed = GpuActionStatesSchema.safeParse(JSON.parse(raw));
    return parsed.success ? { ...parsed.data } : {};
  } catch {
    return {};
  }
}
