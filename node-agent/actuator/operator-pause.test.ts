import { describe, expect, it } from 'vitest';
import { GPU_ACTION_RESULTS_ANNOTATION, GPU_ACTIONS_ANNOTATION, type GpuActionRequest } from '../../events/index.ts';
import { GpuActuator } from './actuator.ts';
import type { Holders } from './options.ts';
import {
  OPERATOR_CLIENTS,
  OPERATOR_PAUSED_ANNOTATION,
  OperatorPause,
  type OperatorClientsPort,
} from './operator-pause.ts';

const G0 = 'GPU-00000000-0000-4000-8000-000000000000';
const T0 = Date.parse('2026-12-01T03:00:00.000Z');
const DP = 'nvidia.com/gpu.deploy.device-plugin';
const DCGM = 'nvidia.com/gpu.deploy.dcgm';

/**
 * One node: labels, annotations, and the GPU Operator's pods, which leave `leaveAfterTicks` ticks after
 * their deploy label turns false (unless `stuck`) and come back when it is true or absent again.
 */
function rig(o: { labels?: Record<string, string>; stuck?: boolean; holders?: Holders; resetFails?: string } = {}) {
  let now = T0;
  const labels: Record<string, string> = { ...o.labels };
  const annotations: Record<string, string> = {};
  const calls: string[] = [];
  let persistence = true;
  const pods = () =>
    OPERATOR_CLIENTS.filter((c) => labels[c.label] !== 'false' || o.stuck).map((c) => `gpu-operator/${c.app}-x`);
  let leaving = 0;
  let crashRestore = false;
  let crashReset = false;
  const port: OperatorClientsPort = {
    read: async () => ({ labels: { ...labels }, annotations: { ...annotations } }),
    patch: async (l, record) => {
      if (record === null && crashRestore) {
        crashRestore = false;
        throw new Error('agent killed');
      }
      calls.push(`patch ${JSON.stringify(l)}${record === null ? ' -record' : ' +record'}`);
      for (const [k, v] of Object.entries(l))
        if (v === null) delete labels[k];
        else labels[k] = v;
      if (record === null) delete annotations[OPERATOR_PAUSED_ANNOTATION];
      else annotations[OPERATOR_PAUSED_ANNOTATION] = record;
      leaving = 1;
    },
    // The pods take one more tick to go than the label flip.
    podsOnNode: async () => (leaving-- > 0 ? OPERATOR_CLIENTS.map((c) => `gpu-operator/${c.app}-x`) : pods()),
  };
  /** A results write whose JSON matches this fails once (a 409, or the agent killed before it). */
  let failWrite: RegExp | undefined;
  // A restart is a new pause and actuator over the same Node and GPU.
  const start = () => {
    const pause = new OperatorPause({
      port,
      pauseTimeoutMs: 60_000,
      now: () => now,
      holders: () => o.holders ?? [],
      reset: async () => {
        if (crashReset) {
          crashReset = false;
          throw new Error('agent killed');
        }
        calls.push(`reset (persistence ${persistence ? 'on' : 'off'}, ${pods().length} operator pods)`);
        return o.resetFails ? { ok: false, reason: o.resetFails } : { ok: true };
      },
      persistence: () => persistence,
      setPersistence: (_u, on) => {
        persistence = on;
        calls.push(`persistence ${on ? 'on' : 'off'}`);
        return { ok: true };
      },
    });
    const actuator = new GpuActuator({
      node: 'n1',
      nodeApi: {
        annotations: async () => ({ ...annotations }),
        writeResults: async (json) => {
          if (failWrite?.test(json)) {
            failWrite = undefined;
            throw new Error('409 Conflict: the object has been modified');
          }
          annotations[GPU_ACTION_RESULTS_ANNOTATION] = json;
        },
      },
      gpus: {
        indexOf: (u) => (u === G0 ? 0 : undefined),
        holders: () => [],
        reset: async () => ({ ok: true }),
        health: () => ({
          nvmlAnswers: true,
          recoveryAction: 'none',
          remapPending: false,
          remapFailed: false,
          eccUncorrected: 0,
        }),
      },
      fence: { read: () => ({ index: [], uuid: [] }), ours: () => [], add: () => undefined, remove: () => false },
      publish: async () => undefined,
      now: () => now,
      xids: () => [],
      pause,
    });
    return actuator;
  };
  let actuator = start();
  const ask = (timeoutSeconds = 600) => {
    const r: GpuActionRequest = {
      id: 'reset.0001',
      action: 'reset',
      gpuUuid: G0,
      incident: 'n1/gpu/xid-95',
      requestedAt: new Date(now).toISOString(),
      timeoutSeconds,
    };
    annotations[GPU_ACTIONS_ANNOTATION] = JSON.stringify([r]);
  };
  const state = () => JSON.parse(annotations[GPU_ACTION_RESULTS_ANNOTATION] ?? '{}')['reset.0001'];
  return {
    labels,
    annotations,
    calls,
    ask,
    state,
    persistence: () => persistence,
    crashOnReset: () => void (crashReset = true),
    crashOnRestore: () => void (crashRestore = true),
    restart: () => void (actuator = start()),
    failWriteOnce: (re: RegExp) => void (failWrite = re),
    tick: async (stepMs = 5_000) => {
      await actuator.tick();
      now += stepMs;
    },
  };
}

describe('a reset with the GPU Operator paused (opt-in)', () => {
  it('pauses the clients, waits for their pods, turns persistence off, resets, and restores every label as it was', async () => {
    // device-plugin was true, dcgm had been set false by someone else, the rest were absent.
    const r = rig({ labels: { [DP]: 'true', [DCGM]: 'false', keep: 'me' } });
    r.ask();
    await r.tick();
    expect(r.state()).toMatchObject({
      state: 'running',
      reason: expect.stringContaining('GPU Operator clients paused'),
    });
    for (const c of OPERATOR_CLIENTS) expect(r.labels[c.label]).toBe('false');
    expect(JSON.parse(r.annotations[OPERATOR_PAUSED_ANNOTATION]!).prior).toMatchObject({
      [DP]: 'true',
      [DCGM]: 'false',
    });
    await r.tick();
    expect(r.state()).toMatchObject({ state: 'running', reason: 'waiting for 5 GPU Operator pod(s) to leave' });
    await r.tick();
    expect(r.state()).toMatchObject({ state: 'done' });
    expect(r.state().reason).toBe(
      'GPU Operator clients paused, their pods gone; persistence mode off; GPU reset; persistence mode back on; deploy labels restored',
    );
    expect(r.calls).toContain('reset (persistence off, 0 operator pods)');
    expect(r.labels).toEqual({ [DP]: 'true', [DCGM]: 'false', keep: 'me' });
    expect(r.annotations[OPERATOR_PAUSED_ANNOTATION]).toBeUndefined();
  });

  it('refuses the reset when the pods do not leave within the bound, and restores the labels', async () => {
    const r = rig({ labels: { [DP]: 'true' }, stuck: true });
    r.ask();
    for (let i = 0; i < 13; i++) await r.tick();
    expect(r.state()).toMatchObject({
      state: 'failed',
      reason: expect.stringMatching(/^busy: GPU Operator pods still/),
    });
    expect(r.state().holders).toContain('gpu-operator/nvidia-device-plugin-daemonset-x');
    expect(r.calls.some((c) => c.startsWith('reset'))).toBe(false);
    expect(r.labels).toEqual({ [DP]: 'true' });
  });

  it('refuses the reset when NVML cannot list the processes once the pods are gone, and restores the labels', async () => {
    // Unknown is not "nothing holds it" (nvmlDeviceGetComputeRunningProcesses_v3 answered NOT_SUPPORTED).
    const why = 'NVML cannot list its compute processes (nvmlDeviceGetComputeRunningProcesses_v3: NOT_SUPPORTED)';
    const r = rig({ labels: { [DP]: 'true' }, holders: { unknown: why } });
    r.ask();
    for (let i = 0; i < 3; i++) await r.tick();
    expect(r.state()).toMatchObject({
      state: 'failed',
      reason: `processes unknown: ${why}; not reset; labels restored`,
    });
    expect(r.calls.some((c) => c.startsWith('reset') || c.startsWith('persistence'))).toBe(false);
    expect(r.labels).toEqual({ [DP]: 'true' });
    expect(r.annotations[OPERATOR_PAUSED_ANNOTATION]).toBeUndefined();
  });

  it('restores the labels when the reset fails, and says so', async () => {
    const r = rig({ resetFails: 'nvidia-smi --gpu-reset exited 255: In use by another client' });
    r.ask();
    for (let i = 0; i < 3; i++) await r.tick();
    expect(r.state()).toMatchObject({ state: 'failed', reason: expect.stringContaining('reset failed (nvidia-smi') });
    expect(r.labels).toEqual({});
  });

  it('restores the labels of a pause whose request timed out meanwhile', async () => {
    const r = rig({ labels: { [DP]: 'true' }, stuck: true });
    r.ask(10);
    await r.tick(20_000);
    expect(r.labels[DP]).toBe('false');
    await r.tick();
    expect(r.state()).toMatchObject({ state: 'failed', reason: 'timeout' });
    expect(r.labels).toEqual({ [DP]: 'true' });
    expect(r.annotations[OPERATOR_PAUSED_ANNOTATION]).toBeUndefined();
  });

  it('does not reset again after a restart between the reset and its answer, and leaves the labels restored', async () => {
    const r = rig({ labels: { [DP]: 'true' } });
    r.ask();
    await r.tick();
    await r.tick();
    r.failWriteOnce(/"state":"(done|failed)"/); // the agent is killed before its answer reaches the Node
    await expect(r.tick()).rejects.toThrow();
    expect(r.calls.filter((c) => c.startsWith('reset'))).toHaveLength(1);
    r.restart();
    for (let i = 0; i < 4; i++) await r.tick();
    expect(r.calls.filter((c) => c.startsWith('reset'))).toHaveLength(1);
    expect(r.state()).toMatchObject({ state: 'failed', reason: expect.stringMatching(/^interrupted: /) });
    expect(r.labels).toEqual({ [DP]: 'true' });
    expect(r.annotations[OPERATOR_PAUSED_ANNOTATION]).toBeUndefined();
  });

  it('does not reset again after a restart between the reset and the labels restored', async () => {
    const r = rig({ labels: { [DP]: 'true' } });
    r.ask();
    await r.tick();
    await r.tick();
    r.crashOnRestore(); // the agent is killed after the reset, before the labels go back
    await expect(r.tick()).rejects.toThrow();
    expect(r.annotations[OPERATOR_PAUSED_ANNOTATION]).toBeDefined(); // the labels still paused
    r.restart();
    for (let i = 0; i < 4; i++) await r.tick();
    expect(r.calls.filter((c) => c.startsWith('reset'))).toHaveLength(1);
    expect(r.state()).toMatchObject({ state: 'failed', reason: expect.stringMatching(/^interrupted: /) });
    expect(r.labels).toEqual({ [DP]: 'true' });
    expect(r.annotations[OPERATOR_PAUSED_ANNOTATION]).toBeUndefined();
  });

  it('never takes a pause record it cannot read for none: the labels are not recorded as false, nothing written over it', async () => {
    const r = rig({ labels: { [DP]: 'true' } });
    r.ask();
    await r.tick(); // paused: every deploy label false, what they were in the record
    // The record damaged (a hand edit, a cut-off write by another tool): what the labels were is unknown.
    const damaged = r.annotations[OPERATOR_PAUSED_ANNOTATION]!.slice(0, -3);
    r.annotations[OPERATOR_PAUSED_ANNOTATION] = damaged;
    const before = r.calls.length;
    for (let i = 0; i < 4; i++) await r.tick();
    // Read as absent, the next pause recorded `false` as the labels' prior values and "restored" them to false.
    expect(r.calls.slice(before)).toEqual([]);
    expect(r.annotations[OPERATOR_PAUSED_ANNOTATION]).toBe(damaged);
    expect(r.state()).toMatchObject({ state: 'failed' });
    expect(r.state().reason).toContain(OPERATOR_PAUSED_ANNOTATION);
  });

  it('turns persistence mode back on after a restart between turning it off and the reset', async () => {
    const r = rig({ labels: { [DP]: 'true' } });
    r.ask();
    await r.tick();
    await r.tick();
    r.crashOnReset(); // the agent is killed with persistence mode off, before the reset
    await expect(r.tick()).rejects.toThrow();
    expect(r.persistence()).toBe(false);
    r.restart();
    for (let i = 0; i < 4; i++) await r.tick();
    expect(r.persistence()).toBe(true);
    expect(r.labels).toEqual({ [DP]: 'true' });
    expect(r.annotations[OPERATOR_PAUSED_ANNOTATION]).toBeUndefined();
  });
});
