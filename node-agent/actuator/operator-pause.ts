/**
 * A GPU reset the way NVIDIA's own tooling does it (issue #27), opt-in (GPU_RESET_PAUSE_OPERATOR):
 *
 *   1. pause the GPU Operator's clients on this node — every `nvidia.com/gpu.deploy.<component>` label
 *      below set to `false`, so their DaemonSets take their pods off the node and the handles they hold
 *      on /dev/nvidia* go with them; what each label was is written first, in the same patch, to the
 *      node annotation `gpu-reflex.io/operator-paused` (a restarted agent still restores them);
 *   2. wait for those pods to leave, bounded (`pauseTimeoutMs`, on the injected clock; a tick at a time,
 *      never a sleep); still there at the bound: labels restored, the reset refused;
 *   3. persistence mode off when it was on (the record says so first: a restarted agent turns it back on);
 *   4. the reset; 5. persistence mode back on when it was;
 *   6. the labels restored exactly as they were: a label someone else had set to `false` stays `false`,
 *      one that was absent is removed again — whatever the reset's outcome.
 *
 * Sources: NVIDIA/NVSentinel ADR-019 "Janitor support for GPU reset" (the clients, the persistence mode
 * order, labels reverted regardless of the outcome); NVIDIA/mig-parted's GPU Operator hook
 * reconfigure-mig.sh (the same labels set to false, `kubectl wait --for=delete` on each client's pods by
 * `app` label and node, 5 min bound, then the labels set back); NVIDIA/gpu-operator
 * controllers/state_manager.go (the deploy label names).
 */
import type { GpuActionRequest, GpuActionState } from '../../events/index.ts';
import type { Holders } from './options.ts';
import { heldBy } from './requests.ts';

/** The node annotation that records a pause under way: `{ id, at, prior: { label: value | null } }`. */
export const OPERATOR_PAUSED_ANNOTATION = 'gpu-reflex.io/operator-paused';

/** The GPU Operator's clients that hold a GPU open, by deploy label and their pods' `app` label. */
export const OPERATOR_CLIENTS: readonly { label: string; app: string }[] = [
  { label: 'nvidia.com/gpu.deploy.device-plugin', app: 'nvidia-device-plugin-daemonset' },
  { label: 'nvidia.com/gpu.deploy.gpu-feature-discovery', app: 'gpu-feature-discovery' },
  { label: 'nvidia.com/gpu.deploy.dcgm-exporter', app: 'nvidia-dcgm-exporter' },
  { label: 'nvidia.com/gpu.deploy.dcgm', app: 'nvidia-dcgm' },
  { label: 'nvidia.com/gpu.deploy.operator-validator', app: 'nvidia-operator-validator' },
];

/** This node, as the pause needs it (RBAC: nodes get/patch — its own; pods list on its node). */
export interface OperatorClientsPort {
  /** The node's labels and annotations now. */
  read(): Promise<{ labels: Record<string, string>; annotations: Record<string, string> }>;
  /** One merge patch: labels (null removes one) and the pause record (null removes it). */
  patch(labels: Record<string, string | null>, record: string | null): Promise<void>;
  /** `namespace/name` of the pods on this node whose `app` label is one of `apps` (not yet gone). */
  podsOnNode(apps: readonly string[]): Promise<string[]>;
}

interface PauseRecord {
  id: string;
  at: number;
  prior: Record<string, string | null>;
  /** Persistence mode of this GPU was on and the agent turned it off: whoever restores turns it back on. */
  persistenceOff?: string;
}

export interface PauseDeps {
  port: OperatorClientsPort;
  pauseTimeoutMs: number;
  now: () => number;
  holders: (uuid: string) => Holders;
  reset: (uuid: string) => Promise<{ ok: true } | { ok: false; reason: string }>;
  /** Persistence mode: on/off, undefined when it cannot be read (then left alone). */
  persistence?: (uuid: string) => boolean | undefined;
  setPersistence?: (uuid: string, on: boolean) => { ok: true } | { ok: false; reason: string };
  log?: (line: string) => void;
}

type Base = Pick<GpuActionState, 'action' | 'gpuUuid' | 'at'>;

/**
 * The pause record on the Node: undefined when there is none; `{ unreadable }` when there is one that cannot be
 * parsed or is not this shape. That is unknown, never "no pause": read as none, the next pause would record the
 * labels it finds (`false`, from the pause before) as their prior values and "restore" them to `false` for good.
 */
function readRecord(raw: string | undefined): PauseRecord | { unreadable: string } | undefined {
  if (!raw) return undefined;
  let r: PauseRecord;
  try {
    r = JSON.parse(raw) as PauseRecord;
  } catch (err) {
    return { unreadable: err instanceof Error ? err.message : String(err) };
  }
  return r &&
    typeof r.id === 'string' &&
    typeof r.at === 'number' &&
    r.prior &&
    typeof r.prior === 'object' &&
    Object.values(r.prior).every((v) => v === null || typeof v === 'string') &&
    (r.persistenceOff === undefined || typeof r.persistenceOff === 'string')
    ? r
    : { unreadable: 'not {id, at, prior: {label: value | null}}' };
}

const unreadable = (why: string) =>
  `the pause record (${OPERATOR_PAUSED_ANNOTATION}) is not readable: ${why}; what the GPU Operator's deploy ` +
  `labels were is unknown, so labels and record are left as they are for a person to restore`;

export class OperatorPause {
  /** Pauses begun or ended by `step` since the last `settle`: the annotation read before them is stale. */
  private readonly stepped = new Set<string>();
  /** The unreadable record `settle` last said so of (said once, not every tick). */
  private unreadSaid: string | undefined;

  constructor(private readonly d: PauseDeps) {}

  /**
   * One step of a paused reset (called once per tick while the request runs). `begin`: records on the
   * Node that the reset is under way, before persistence mode or the GPU is touched (actuator.ts
   * RESET_UNDER_WAY: a restarted agent does not reset again).
   */
  async step(r: GpuActionRequest, base: Base, begin?: () => Promise<void>): Promise<GpuActionState> {
    const { labels, annotations } = await this.d.port.read();
    const record = readRecord(annotations[OPERATOR_PAUSED_ANNOTATION]);
    const apps = OPERATOR_CLIENTS.map((c) => c.app);
    this.stepped.add(r.id);
    if (record && 'unreadable' in record) {
      const reason = `not reset: ${unreadable(record.unreadable)}`;
      this.d.log?.(`gpu action ${r.id}: ${reason}`);
      return { ...base, state: 'failed', reason: reason.slice(0, 512) };
    }
    if (!record || record.id !== r.id) {
      // Another request's pause left behind (an agent restarted mid-reset): put it back first.
      if (record) await this.restore(record);
      const prior = Object.fromEntries(OPERATOR_CLIENTS.map((c) => [c.label, labels[c.label] ?? null]));
      const off = Object.fromEntries(OPERATOR_CLIENTS.map((c) => [c.label, 'false']));
      const next: PauseRecord = { id: r.id, at: this.d.now(), prior };
      await this.d.port.patch(off, JSON.stringify(next));
      const names = OPERATOR_CLIENTS.map((c) => c.label.slice('nvidia.com/gpu.deploy.'.length)).join(', ');
      this.d.log?.(`gpu action ${r.id}: GPU Operator clients paused (${names}); waiting for their pods`);
      return { ...base, state: 'running', reason: `GPU Operator clients paused (${names}): waiting for their pods` };
    }
    const left = await this.d.port.podsOnNode(apps);
    if (left.length > 0) {
      const waited = this.d.now() - record.at;
      if (waited < this.d.pauseTimeoutMs)
        return { ...base, state: 'running', reason: `waiting for ${left.length} GPU Operator pod(s) to leave` };
      await this.restore(record);
      return {
        ...base,
        state: 'failed',
        reason:
          `busy: GPU Operator pods still on the node ${Math.round(waited / 1000)} s after their pause; ` +
          `labels restored`,
        holders: left.slice(0, 64),
      };
    }
    const steps = ['GPU Operator clients paused, their pods gone'];
    const held = heldBy(base, this.d.holders(r.gpuUuid), 'not reset; labels restored');
    if (held) {
      await this.restore(record);
      return held;
    }
    await begin?.();
    const wasOn = this.d.persistence?.(r.gpuUuid);
    if (wasOn === true) {
      // Recorded before it is turned off, as the labels are: an agent killed before it is back on
      // restores it with the labels (restore), never leaves it off.
      const marked: PauseRecord = { ...record, persistenceOff: r.gpuUuid };
      await this.d.port.patch({}, JSON.stringify(marked));
      const off = this.d.setPersistence?.(r.gpuUuid, false);
      if (off && !off.ok) {
        await this.restore(record);
        return { ...base, state: 'failed', reason: `persistence mode not turned off: ${off.reason}`.slice(0, 512) };
      }
      steps.push('persistence mode off');
    } else if (wasOn === undefined) steps.push('persistence mode unknown: left alone');
    const done = await this.d.reset(r.gpuUuid);
    steps.push(done.ok ? 'GPU reset' : `reset failed (${done.reason})`);
    if (wasOn === true) {
      const on = this.d.setPersistence?.(r.gpuUuid, true);
      steps.push(on && !on.ok ? `persistence mode NOT back on: ${on.reason}` : 'persistence mode back on');
    }
    // `record` as read at the start of this step: persistence mode is handled just above.
    await this.restore(record);
    steps.push('deploy labels restored');
    const reason = steps.join('; ').slice(0, 512);
    return done.ok ? { ...base, state: 'done', reason } : { ...base, state: 'failed', reason };
  }

  /**
   * A pause whose request is no longer running (timed out, withdrawn, answered by a restarted agent):
   * its labels go back. `running`: the ids of resets still under way.
   */
  async settle(annotations: Record<string, string>, running: ReadonlySet<string>): Promise<void> {
    const raw = annotations[OPERATOR_PAUSED_ANNOTATION];
    const record = readRecord(raw);
    if (record && 'unreadable' in record) {
      this.stepped.clear();
      if (this.unreadSaid !== raw) this.d.log?.(unreadable(record.unreadable));
      this.unreadSaid = raw;
      return;
    }
    this.unreadSaid = undefined;
    const stepped = this.stepped.has(record?.id ?? '');
    this.stepped.clear();
    if (record && !running.has(record.id) && !stepped) await this.restore(record);
  }

  /**
   * Persistence mode back on where the record says the agent turned it off; each label back to what it
   * was (absent: removed), and the record removed, in one patch.
   */
  private async restore(record: PauseRecord): Promise<void> {
    if (record.persistenceOff) {
      const on = this.d.setPersistence?.(record.persistenceOff, true);
      this.d.log?.(
        `gpu action ${record.id}: persistence mode of ${record.persistenceOff} ` +
          (on && !on.ok ? `NOT back on: ${on.reason}` : 'back on'),
      );
    }
    await this.d.port.patch({ ...record.prior }, null);
    this.d.log?.(`gpu action ${record.id}: GPU Operator deploy labels restored`);
  }
}
