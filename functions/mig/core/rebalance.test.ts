import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { PartedConfigError, partedEntry, withPartedEntry } from './parted.ts';
import {
  DEFAULT_MIG_REBALANCE,
  MIG_CONFIG_LABEL,
  MIG_CONFIG_STATE_LABEL,
  migConfigName,
  stepMigNode,
  type MigNodeFacts,
  type PlannedNodeChange,
} from './rebalance.ts';

const T0 = Date.parse('2026-11-21T03:00:00.000Z');
const at = (s: number) => new Date(T0 + s * 1000);
const SEVEN = Array<string>(7).fill('1g.10gb');
const planned: PlannedNodeChange = {
  current: [SEVEN, SEVEN, SEVEN],
  changes: [{ gpu: 2, from: SEVEN, to: ['3g.40gb', '3g.40gb'], unblocks: ['ml/ft-0', 'ml/ft-1'] }],
};
const node = (o: Partial<MigNodeFacts> = {}): MigNodeFacts => ({
  name: 'h100-0',
  labels: { [MIG_CONFIG_LABEL]: 'all-1g.10gb', [MIG_CONFIG_STATE_LABEL]: 'success' },
  unschedulable: false,
  ...o,
});

/** Runs steps, applying each one's labels, cordon and record to the node, as the applier would. */
function run(n: MigNodeFacts, step: ReturnType<typeof stepMigNode>): MigNodeFacts {
  const labels = { ...n.labels };
  for (const [k, v] of Object.entries(step.labels))
    if (v === null) delete labels[k];
    else labels[k] = v;
  const { record, ...rest } = n;
  void record;
  return {
    ...rest,
    labels,
    unschedulable: step.unschedulable ?? n.unschedulable,
    ...(step.record ? { record: step.record } : {}),
  };
}

describe('applying a MIG plan through mig-manager', () => {
  it('writes the config and cordons, sets the label after the config sync, and uncordons on success', () => {
    const start = stepMigNode(node(), planned, at(0));
    expect(start).toMatchObject({
      kind: 'start',
      unschedulable: true,
      labels: {},
      state: 'pending',
      record: { phase: 'writing', previous: 'all-1g.10gb', cordoned: true },
    });
    expect(start.config).toEqual({ name: start.record!.config, layout: [SEVEN, SEVEN, ['3g.40gb', '3g.40gb']] });
    expect(start.why).toContain('GPU 2 7×1g.10gb → 2×3g.40gb for 2 pending pod(s)');
    let n = run(node(), start);
    expect(stepMigNode(n, undefined, at(DEFAULT_MIG_REBALANCE.configSyncSeconds - 1)).kind).toBe('wait');
    const label = stepMigNode(n, undefined, at(DEFAULT_MIG_REBALANCE.configSyncSeconds));
    expect(label).toMatchObject({
      kind: 'label',
      // the last run's state goes with our write: a success read later is this change's
      labels: { [MIG_CONFIG_LABEL]: start.record!.config, [MIG_CONFIG_STATE_LABEL]: null },
      record: { phase: 'applying', stateCleared: true },
    });
    n = run(n, label);
    expect(n.labels[MIG_CONFIG_STATE_LABEL]).toBeUndefined();
    // mig-manager: pending (recorded as seen), then success
    n = { ...n, labels: { ...n.labels, [MIG_CONFIG_STATE_LABEL]: 'pending' } };
    const seen = stepMigNode(n, undefined, at(200));
    expect(seen).toMatchObject({ kind: 'observe', labels: {}, record: { sawPending: true } });
    n = run(n, seen);
    expect(stepMigNode(n, undefined, at(210)).kind).toBe('wait');
    n = { ...n, labels: { ...n.labels, [MIG_CONFIG_STATE_LABEL]: 'success' } };
    // success alone is not done: the agent's inventory, newer than the change, must show the instances
    expect(stepMigNode(n, undefined, at(300)).kind).toBe('wait');
    const old = { at: at(10).toISOString(), gpus: [{ index: 2, profiles: SEVEN }] };
    expect(stepMigNode({ ...n, inventory: old }, undefined, at(300)).kind).toBe('wait');
    const stillOld = { at: at(250).toISOString(), gpus: [{ index: 2, profiles: SEVEN }] };
    expect(stepMigNode({ ...n, inventory: stillOld }, undefined, at(300)).kind).toBe('wait');
    const now = { at: at(250).toISOString(), gpus: [{ index: 2, profiles: ['3g.40gb', '3g.40gb'] }] };
    const done = stepMigNode({ ...n, inventory: now }, undefined, at(300));
    expect(done).toMatchObject({ kind: 'done', unschedulable: false, state: 'success' });
    expect(done.record).toBeUndefined();
  });

  it("never reads the last run's success as this change's: no evidence, no done; then the failure path", () => {
    const start = stepMigNode(node(), planned, at(0));
    const labelled = run(run(node(), start), stepMigNode(run(node(), start), undefined, at(90)));
    // mig-manager is down: nothing writes the state; a success left over (a record from before the
    // state was cleared) is not evidence either
    const stale = {
      ...labelled,
      labels: { ...labelled.labels, [MIG_CONFIG_STATE_LABEL]: 'success' },
      record: { ...labelled.record!, stateCleared: undefined },
      inventory: { at: at(100).toISOString(), gpus: [{ index: 2, profiles: ['3g.40gb', '3g.40gb'] }] },
    };
    for (const n of [labelled, stale]) {
      expect(stepMigNode(n, undefined, at(19 * 60)).kind).toBe('wait');
      const failed = stepMigNode(n, undefined, at(90 + 20 * 60));
      expect(failed).toMatchObject({
        kind: 'failed',
        labels: { [MIG_CONFIG_LABEL]: 'all-1g.10gb' },
        state: 'failed',
        record: { phase: 'failed', reason: expect.stringContaining('mig-manager never took') },
      });
      expect(failed.why).toContain('is mig-manager running on the node?');
    }
  });

  it('fails when mig-manager says success but the agent never shows the instances', () => {
    const start = stepMigNode(node(), planned, at(0));
    let n = run(run(node(), start), stepMigNode(run(node(), start), undefined, at(90)));
    n = {
      ...n,
      labels: { ...n.labels, [MIG_CONFIG_STATE_LABEL]: 'success' },
      inventory: { at: at(200).toISOString(), gpus: [{ index: 2, profiles: SEVEN }] },
    };
    expect(stepMigNode(n, undefined, at(600)).kind).toBe('wait');
    expect(stepMigNode(n, undefined, at(90 + 20 * 60)).record?.reason).toBe(
      `mig-manager reported success for ${start.record!.config}, but within 20 min the node agent's MIG ` +
        `inventory shows GPU 2 as 7×1g.10gb, not 2×3g.40gb`,
    );
  });

  it('leaves a node that was cordoned before cordoned after', () => {
    const start = stepMigNode(node({ unschedulable: true }), planned, at(0));
    expect(start.unschedulable).toBeUndefined();
    expect(start.record?.cordoned).toBe(false);
    const applying = {
      ...node({ unschedulable: true }),
      labels: { [MIG_CONFIG_LABEL]: start.record!.config, [MIG_CONFIG_STATE_LABEL]: 'success' },
      record: { ...start.record!, phase: 'applying' as const, stateCleared: true },
      inventory: { at: at(200).toISOString(), gpus: [{ index: 2, profiles: ['3g.40gb', '3g.40gb'] }] },
    };
    expect(stepMigNode(applying, undefined, at(300))).toMatchObject({ kind: 'done' });
    expect(stepMigNode(applying, undefined, at(300)).unschedulable).toBeUndefined();
  });

  it('on failure or timeout puts the previous config back, keeps the node cordoned, and says why', () => {
    const start = stepMigNode(node(), planned, at(0));
    const applying = {
      ...node({ unschedulable: true }),
      labels: { [MIG_CONFIG_LABEL]: start.record!.config, [MIG_CONFIG_STATE_LABEL]: 'failed' },
      record: { ...start.record!, phase: 'applying' as const, stateCleared: true },
    };
    const failed = stepMigNode(applying, undefined, at(200));
    expect(failed).toMatchObject({
      kind: 'failed',
      labels: { [MIG_CONFIG_LABEL]: 'all-1g.10gb' },
      state: 'failed',
      record: { phase: 'failed', reason: expect.stringContaining('failed') },
    });
    expect(failed.unschedulable).toBeUndefined();
    expect(failed.why).toContain('the node stays cordoned for a person to look');
    const stuck = {
      ...applying,
      labels: { ...applying.labels, [MIG_CONFIG_STATE_LABEL]: 'pending' },
      record: { ...applying.record, sawPending: true },
    };
    expect(stepMigNode(stuck, undefined, at(19 * 60)).kind).toBe('wait');
    expect(stepMigNode(stuck, undefined, at(20 * 60 + 1)).record?.reason).toBe(
      `mig-manager did not report success for ${start.record!.config} within 20 min (state: pending)`,
    );
    // someone else relabelled the node: ours is not put back over theirs
    const taken = { ...applying, labels: { [MIG_CONFIG_LABEL]: 'all-balanced' } };
    expect(stepMigNode(taken, undefined, at(60))).toMatchObject({ kind: 'failed', labels: {} });
    // once failed, nothing more until a person clears the record
    expect(stepMigNode({ ...applying, record: failed.record! }, planned, at(9999)).kind).toBe('none');
  });

  it('names configs as label values, per node and layout', () => {
    const a = migConfigName('h100-0', [SEVEN]);
    expect(a).toMatch(/^gpu-reflex-h100-0-[0-9a-f]{8}$/);
    expect(migConfigName('h100-0', [SEVEN])).toBe(a);
    expect(migConfigName('h100-0', [['7g.80gb']])).not.toBe(a);
    expect(migConfigName('A'.repeat(250), [SEVEN]).length).toBeLessThanOrEqual(63);
  });
});

describe('the mig-parted config', () => {
  it('groups GPUs with one layout into one entry', () => {
    expect(partedEntry([SEVEN, ['3g.40gb', '3g.40gb'], SEVEN])).toEqual([
      { devices: [0, 2], 'mig-enabled': true, 'mig-devices': { '1g.10gb': 7 } },
      { devices: [1], 'mig-enabled': true, 'mig-devices': { '3g.40gb': 2 } },
    ]);
  });

  it("adds our entry, keeps everyone else's, and drops our stale ones for the node", () => {
    const operator =
      'version: v1\nmig-configs:\n  all-1g.10gb:\n    - devices: all\n      mig-enabled: true\n      mig-devices: { "1g.10gb": 7 }\n  gpu-reflex-h100-0-aaaaaaaa: []\n  gpu-reflex-h100-0-bbbbbbbb: []\n  gpu-reflex-h100-1-cccccccc: []\n';
    const out = parse(
      withPartedEntry(operator, 'gpu-reflex-h100-0-dddddddd', [SEVEN], new Set(['gpu-reflex-h100-0-bbbbbbbb'])),
    ) as { version: string; 'mig-configs': Record<string, unknown> };
    expect(out.version).toBe('v1');
    expect(Object.keys(out['mig-configs']).sort()).toEqual([
      'all-1g.10gb',
      'gpu-reflex-h100-0-bbbbbbbb',
      'gpu-reflex-h100-0-dddddddd',
      'gpu-reflex-h100-1-cccccccc',
    ]);
    expect(out['mig-configs']['all-1g.10gb']).toEqual([
      { devices: 'all', 'mig-enabled': true, 'mig-devices': { '1g.10gb': 7 } },
    ]);
    expect(parse(withPartedEntry(undefined, 'gpu-reflex-n-11111111', [SEVEN], new Set()))).toEqual({
      version: 'v1',
      'mig-configs': {
        'gpu-reflex-n-11111111': [{ devices: [0], 'mig-enabled': true, 'mig-devices': { '1g.10gb': 7 } }],
      },
    });
  });

  it('refuses a config it cannot safely rewrite', () => {
    expect(() => withPartedEntry('version: v2\nmig-configs: {}\n', 'x', [SEVEN], new Set())).toThrow(PartedConfigError);
    expect(() => withPartedEntry('- a\n- b\n', 'x', [SEVEN], new Set())).toThrow(/not a mapping/);
    expect(() => withPartedEntry('a: [\n', 'x', [SEVEN], new Set())).toThrow(/not YAML/);
  });
});
