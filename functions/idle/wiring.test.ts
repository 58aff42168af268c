import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Context, EventBridgeEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import {
  catalogEntry,
  exampleEvent,
  GPU_UTILIZATION_SUMMARY,
  type GpuIdleAllocationDetail,
} from '../../events/index.ts';
import { RecordingPublisher } from '../adapters/bus.ts';
import { dryRunPorts } from '../adapters/kube/dry-run.ts';
import { DryRunNotifier, DryRunPublisher } from '../lib/dry-run.ts';
import { DEFAULT_IDLE_POLICY, IdlePolicySchema } from './core/policy.ts';
import { createIdleHandler } from './handler.ts';
import { watchIdle } from './run.ts';
import { GPU0, holder, idleWatcher, MIN, summary, T0 } from './testing.ts';
import { idlePolicyFromEnv, type IdleWiring } from './wiring.ts';

const dir = mkdtempSync(join(tmpdir(), 'idle-wiring-'));
const file = (name: string, text: string) => (writeFileSync(join(dir, name), text), join(dir, name));
const example = exampleEvent(catalogEntry(GPU_UTILIZATION_SUMMARY)!) as Record<string, unknown>;
const envelope = (detailType: string, detail: unknown) =>
  ({ ...example, 'detail-type': detailType, detail }) as unknown as EventBridgeEvent<string, unknown>;
const NB = [holder('research', 'notebook', GPU0)];
const idleGpu = [{ uuid: GPU0, util: 0, mem: 0 }];

describe('idle-gpus wiring and handler', () => {
  it('reads IDLE_POLICY_FILE, naming file and field of a mistake; the defaults without one', () => {
    expect(idlePolicyFromEnv({})).toEqual(DEFAULT_IDLE_POLICY);
    expect(idlePolicyFromEnv({ IDLE_POLICY_FILE: file('ok.yaml', 'windowMinutes: 60\n') }).windowMinutes).toBe(60);
    expect(() => idlePolicyFromEnv({ IDLE_POLICY_FILE: file('bad.yaml', 'currency: yuan\n') })).toThrow(
      /bad\.yaml is invalid:\n {2}currency: /,
    );
  });

  it('watches the node a GPU Utilization Summary names, drops any other detail-type, acknowledges a node gone', async () => {
    const w = idleWatcher(DEFAULT_IDLE_POLICY);
    const wiring = { ...w.deps, kube: w.kube, idlePolicy: DEFAULT_IDLE_POLICY } as unknown as IdleWiring;
    const handle = createIdleHandler(() => wiring);
    const ctx = { awsRequestId: 'r' } as Context;
    expect(await handle(envelope('GPU Utilization Summary', summary(T0, idleGpu, NB)), ctx)).toMatchObject({
      status: 'done',
      result: { node: 'gpu-1', findings: [] },
    });
    expect(await handle(envelope('GPU Inventory', summary(T0, idleGpu, NB)), ctx)).toMatchObject({ status: 'dropped' });
    expect(
      await handle(envelope('GPU Utilization Summary', summary(T0, idleGpu, NB, 10 * MIN, 'gone-1')), ctx),
    ).toMatchObject({ status: 'already-done' });
  });

  it('in a dry run (the wiring wraps the ports) evicts nobody, tells nobody, and publishes the report marked', async () => {
    const w = idleWatcher(IdlePolicySchema.parse({ namespaces: { research: { evict: { afterMinutes: 0 } } } }));
    const bus = new RecordingPublisher();
    const deps = {
      ...w.deps,
      ...dryRunPorts({ ...w.kube, events: w.deps.events! }, () => undefined),
      publisher: new DryRunPublisher(bus),
      notifier: new DryRunNotifier(),
    };
    for (let i = 0; i < 14; i++) await watchIdle(deps, summary(T0 + i * 10 * MIN, idleGpu, NB));
    expect(w.kube.cluster.pod('research', 'notebook')?.terminating).toBe(false);
    expect(w.notifier.notices).toEqual([]);
    expect(w.podEvents).toEqual([]);
    expect(bus.published.map((e) => [(e.detail as GpuIdleAllocationDetail).state, e.detail.dryRun])).toEqual([
      ['idle', true],
      ['evicted', true],
    ]);
  });
});
