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
 *   reset           — refused (`busy`, naming what holds it) while processes use the GPU, and (`processes unknown`)
 *                     while NVML cannot list them; else the GPU reset
 *                     (opt-in: the GPU Operator's clients paused and restored around it, operator-pause.ts)
 *                     — recorded on the Node as under way before it is done: never carried out twice (RESET_UNDER_WAY)
 *   probe           — after `probeSeconds` of watching: NVML answers and still enumerates the GPU under
 *                     its UUID (counted), recovery action none (unknown is not none), no row remap
 *                     pending or failed, no new uncorrected ECC error and no XID on it since the probe began
 *                     — its running answer carries the evidence so far: a restarted agent resumes it (probe.ts)
 *   drain-on/off    — NVML drain state (refused `busy` while processes use the GPU, or they are unknown, to turn it on)
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
 *
 * Its options and ports: options.ts; the probe: probe.ts; the requests and answers on the Node:
 * requests.ts; the other annotations it keeps: node-annotations.ts.
 */
import {
  GPU_ACTION_RESULT,
  GPU_ACTION_RESULTS_ANNOTATION,
  GPU_DEVICES_ANNOTATION,
  GPU_ACTIONS_ANNOTATION,
  LEGACY_GPU_ACTION_OWNER,
  MIG_INVENTORY_ANNOTATION,
  type GpuActionRequest,
  type GpuActionResultDetail,
  type GpuActionState,
} from '../../events/index.ts';
import { allocatableSeen, fenceOnce, holdFence, unfenceOnce } from './fence-hold.ts';
import { writeGpuDevices, writeMigInventory } from './node-annotations.ts';
import type { ActuatorOptions } from './options.ts';
import { GpuProbes } from './probe.ts';
import { heldBy, keyOf, ownerOf, parseRequests, parseResults, resultDetail, sameResults } from './requests.ts';

/**
 * A reset's state on the Node from just before the GPU is reset until its answer is written: a
 * reset is not idempotent (a second one may hit a pod placed on the GPU since), so it is recorded
 * before it is done, and an agent that finds this state without having decided the answer itself
 * (it restarted in between) does not reset again.
 */
export const RESET_UNDER_WAY = 'GPU reset under way';

export type { ActuatorGpus, ActuatorNode, ActuatorOptions, FenceFileOps, GpuHealthReading } from './options.ts';

export class GpuActuator {
  /** Probes under way (probe.ts). */
  private readonly probes: GpuProbes;
  /** Dry run writes nothing to the Node: what it answered is remembered here instead. */
  private readonly dryAnswered = new Set<string>();
  /**
   * The answers this agent decided (done, failed, a fence written back) and has not yet seen written to
   * the Node: one whose write failed (a 409, a 5xx, a tick that threw) is written and published at the
   * next tick, never carried out again, never lost.
   */
  private readonly unwritten = new Map<string, { state: GpuActionState; detail: GpuActionResultDetail }>();
  /** Held fences whose check found the fence file unreadable (logged once until it reads again). */
  private readonly fenceUnread = new Set<string>();

  constructor(private readonly o: ActuatorOptions) {
    this.probes = new GpuProbes(o);
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
    this.probes.forget(wanted);
    for (const id of this.unwritten.keys()) if (!wanted.has(id)) this.unwritten.delete(id);
    const answer = (id: string, state: GpuActionState, detail: GpuActionResultDetail) => {
      results[id] = state;
      answered.push(detail);
      this.unwritten.set(id, { state, detail });
    };
    // One action per GPU at a time: requests in order, a GPU busy with one waits for the next tick.
    const busy = new Set<string>();
    for (const r0 of requests) {
      // From here on the request goes by its key: the legacy owner's is its id, as before owners.
      const r = { ...r0, id: keyOf(r0) };
      const prior = results[r.id];
      const kept = this.unwritten.get(r.id);
      if (kept) {
        // Decided here, but the write that carried it failed: written now, its event published again
        // (the same event id), the action not carried out a second time.
        answer(r.id, kept.state, kept.detail);
        continue;
      }
      // A fence is held, not done once: every tick the file must still list the GPU (fence-hold.ts).
      if (r.action === 'fence' && prior?.state === 'done' && !this.o.dryRun) {
        let held: GpuActionState | undefined;
        try {
          held = holdFence(
            this.o.fence,
            r,
            prior,
            this.o.gpus.indexOf(r.gpuUuid),
            new Date(this.o.now()).toISOString(),
          );
          this.fenceUnread.delete(r.id);
        } catch (err) {
          // Unknown whether the file lists it: nothing written over it, the answer left as it is, said once.
          if (!this.fenceUnread.has(r.id))
            this.o.log?.(
              `gpu action ${r.id}: fence of ${r.gpuUuid} not checked: ` +
                `${err instanceof Error ? err.message : String(err)}; nothing written over it`,
            );
          this.fenceUnread.add(r.id);
        }
        if (held) {
          answer(r.id, held, resultDetail(this.o, r, held, `restored-${held.fence?.restored ?? 0}`));
          this.o.log?.(
            `gpu action ${r.id}: fence of ${r.gpuUuid} found gone from the fence file: ${held.reason ?? ''}`,
          );
          continue;
        }
        // The Node's allocatable changed (the device plugin took the GPU out): said again, so the
        // functions verify the fence now instead of at their next sweep.
        const seen = allocatableSeen(prior, allocatable);
        if (seen) answer(r.id, seen, resultDetail(this.o, r, seen, `allocatable-${allocatable}-${this.o.now()}`));
        continue;
      }
      if (prior && (prior.state === 'done' || prior.state === 'failed')) continue;
      if (this.dryAnswered.has(r.id)) continue;
      if (busy.has(r.gpuUuid)) continue;
      const done =
        r.action === 'reset' && prior?.state === 'running' && prior.reason === RESET_UNDER_WAY
          ? this.interrupted(r, prior)
          : await this.carryOut(
              r,
              requests,
              async (s) => {
                results[r.id] = s;
                await this.o.nodeApi.writeResults(JSON.stringify(results));
              },
              prior,
            );
      // A fence records the Node's allocatable it was answered against (fence-hold.ts allocatableSeen).
      const state =
        r.action === 'fence' && done.fence && allocatable !== undefined && !this.o.dryRun
          ? { ...done, fence: { ...done.fence, allocatable } }
          : done;
      results[r.id] = state;
      if (state.state === 'running') busy.add(r.gpuUuid);
      if (state.state === 'done' || state.state === 'failed') {
        if (this.o.dryRun) {
          this.dryAnswered.add(r.id);
          answered.push(resultDetail(this.o, r, state));
        } else answer(r.id, state, resultDetail(this.o, r, state));
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
    if (!this.o.dryRun && !sameResults(before, after)) await this.o.nodeApi.writeResults(after);
    // On the Node now (the events below are the prompt; the annotation is the copy that counts).
    this.unwritten.clear();
    // Before the events too: an answer prompts the functions to read and update the Node, and a write of
    // ours after their read would fail their update (409) and push the verification to the next sweep.
    await writeGpuDevices(this.o, annotations[GPU_DEVICES_ANNOTATION]);
    // Written first: the functions read the annotation; the event is the prompt, never the only copy.
    for (const d of answered) await this.o.publish(GPU_ACTION_RESULT, d);
    await writeMigInventory(this.o, annotations[MIG_INVENTORY_ANNOTATION]);
    return answered;
  }

  /**
   * A reset another run of this agent began (RESET_UNDER_WAY on the Node) and never answered: it was
   * killed between the reset and its answer, so whether the GPU was reset is unknown — failed, not
   * reset again, and never `done` on faith ("unknown is never read as healthy"); a paused GPU Operator
   * is restored by `settle`, the request no longer running.
   */
  private interrupted(r: GpuActionRequest, prior: GpuActionState): GpuActionState {
    const { holders: _h, probe: _p, fence: _f, ...rest } = prior;
    return {
      ...rest,
      at: new Date(this.o.now()).toISOString(),
      state: 'failed',
      reason:
        `interrupted: the agent restarted during the GPU reset (begun ${prior.at}); ` +
        `not reset again, its outcome unknown`,
    };
  }

  /**
   * `all`: every request on the Node (an unfence must not undo another owner's fence). `record`: writes a
   * state of this request to the Node now (a reset's RESET_UNDER_WAY, before the GPU is reset). `prior`: its answer
   * on the Node (a running probe's evidence, which a restarted agent resumes from).
   */
  private async carryOut(
    r: GpuActionRequest,
    all: readonly GpuActionRequest[],
    record: (s: GpuActionState) => Promise<void>,
    prior?: GpuActionState,
  ): Promise<GpuActionState> {
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
      case 'unfence':
        return unfenceOnce(this.o.fence, r, index, base, all, prior);
      case 'reset': {
        if (index === undefined) return { ...base, state: 'failed', reason: 'NVML does not know this GPU' };
        const held = heldBy(base, this.o.gpus.holders(r.gpuUuid), 'not reset');
        if (held) return held;
        // Recorded before it is done (a write that fails leaves the GPU as it was, for the next tick).
        const begin = () => record({ ...base, state: 'running', reason: RESET_UNDER_WAY });
        // Opt-in: the GPU Operator's clients paused around the reset, a tick at a time (operator-pause.ts).
        if (this.o.pause) return this.o.pause.step(r, base, begin);
        await begin();
        const done = await this.o.gpus.reset(r.gpuUuid);
        return done.ok
          ? { ...base, state: 'done', reason: 'GPU reset' }
          : { ...base, state: 'failed', reason: done.reason.slice(0, 512) };
      }
      case 'probe':
        return this.probes.step(r, base, index, now, prior);
      case 'drain-on':
      case 'drain-off': {
        if (!this.o.gpus.drain)
          return { ...base, state: 'failed', reason: 'not-supported: this NVML library has no drain state' };
        if (index === undefined) return { ...base, state: 'failed', reason: 'NVML does not know this GPU' };
        const on = r.action === 'drain-on';
        // NVML refuses to drain a GPU in use: say what holds it, as a refused reset does.
        const held = on ? heldBy(base, this.o.gpus.holders(r.gpuUuid), 'not drained') : undefined;
        if (held) return held;
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
}
