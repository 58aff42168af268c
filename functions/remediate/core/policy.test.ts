import { describe, expect, it } from 'vitest';
import {
  describeXid,
  GPU_RECOVERY_ACTIONS,
  HEALTH_CONDITIONS,
  XID_CATALOG,
  type HealthCondition,
  type RemediationAction,
} from '../../../events/index.ts';
import { DEFAULT_POLICY, PolicySchema, poolOf, resolveRule } from './policy.ts';
import { loadPolicy } from './policy-file.ts';

describe('default policy', () => {
  it('is itself a valid policy', () => {
    expect(PolicySchema.safeParse(DEFAULT_POLICY).success).toBe(true);
  });

  it.each([...XID_CATALOG.keys()])('maps XID %i to the catalog action and escalation chain', (x) => {
    const rule = resolveRule(DEFAULT_POLICY, undefined, x);
    const info = describeXid(x);
    expect(rule.action).toBe(info.action);
    expect(rule.then).toEqual(info.then);
    expect(rule.notify).toBe(info.notify);
    expect(rule.escalate !== null).toBe(info.escalateOnRepeat);
  });

  it.each([
    ['gpu-lost', 'critical', 'drain-node', ['reboot-node', 'replace-node']],
    ['ecc-uncorrected', 'critical', 'quarantine-gpu', ['reboot-node', 'replace-node']],
    ['row-remap-pending', 'warning', 'observe', ['quarantine-gpu']],
    ['retired-pages-pending', 'warning', 'observe', ['quarantine-gpu']],
    ['row-remap-failure', 'critical', 'quarantine-gpu', ['replace-node']],
    ['temperature', 'critical', 'quarantine-gpu', []],
    ['temperature', 'warning', 'observe', []],
    ['power', 'warning', 'observe', []],
    ['throttling', 'warning', 'observe', []],
    ['nvlink-down', 'critical', 'quarantine-gpu', ['reboot-node', 'replace-node']],
    ['recovery-action', 'critical', 'observe', []],
    ['utilization-high', 'info', 'ignore', []],
    ['framebuffer-high', 'info', 'ignore', []],
    ['monitoring-degraded', 'warning', 'observe', []],
  ] as [HealthCondition, 'info' | 'warning' | 'critical', RemediationAction, RemediationAction[]][])(
    'maps health condition %s (%s) to %s',
    (condition, severity, action, then) => {
      expect(resolveRule(DEFAULT_POLICY, undefined, { kind: 'condition', condition, severity })).toMatchObject({
        action,
        then,
      });
    },
  );

  it('has a documented row for every health condition', () => {
    for (const c of HEALTH_CONDITIONS) expect(DEFAULT_POLICY.conditions[c]?.action, c).toBeDefined();
  });

  it.each([
    ['none', 'observe'],
    ['gpu-reset', 'quarantine-gpu'],
    ['node-reboot', 'drain-node'],
    ['drain-p2p', 'quarantine-gpu'],
    ['drain-and-reset', 'quarantine-gpu'],
    ['recover-imex-domain', 'observe'],
  ] as const)('obeys recovery action %s with %s', (ra, action) => {
    expect(
      resolveRule(DEFAULT_POLICY, undefined, { kind: 'condition', condition: 'recovery-action', recoveryAction: ra })
        .action,
    ).toBe(action);
    expect(resolveRule(DEFAULT_POLICY, undefined, { kind: 'xid', xid: 154, recoveryAction: ra }).action).toBe(action);
  });

  it('covers every NVML recovery action', () => {
    for (const ra of GPU_RECOVERY_ACTIONS) expect(DEFAULT_POLICY.recoveryActions[ra]?.action, ra).toBeDefined();
  });

  it('lets a recovery action other than none override the XID table, and ignores none beside XID 79', () => {
    expect(resolveRule(DEFAULT_POLICY, undefined, { kind: 'xid', xid: 13, recoveryAction: 'node-reboot' }).action).toBe(
      'drain-node',
    );
    expect(resolveRule(DEFAULT_POLICY, undefined, { kind: 'xid', xid: 79, recoveryAction: 'none' }).action).toBe(
      'drain-node',
    );
  });

  it('quarantines the GPU and notifies on XIDs outside the catalog (never a node drain)', () => {
    expect(resolveRule(DEFAULT_POLICY, undefined, 999)).toMatchObject({
      action: 'quarantine-gpu',
      then: [],
      notify: true,
      escalate: null,
    });
  });

  it('never lets XID 45 escalate, even when a pool asks', () => {
    const p = {
      ...DEFAULT_POLICY,
      pools: { a100: { xids: { '45': { escalate: { count: 2, windowMinutes: 5, distinctWorkloads: 1 } } } } },
    };
    expect(resolveRule(p, 'a100', 45).escalate).toBeNull();
  });

  it('applies pool overrides on top of file rules', () => {
    const p = loadPolicy(
      'xids:\n  48: { action: drain-node }\npools:\n  t4:\n    xids:\n      48: { action: observe }\n',
      'p.yaml',
    );
    expect(resolveRule(p, undefined, 48).action).toBe('drain-node');
    expect(resolveRule(p, 't4', 48)).toMatchObject({ action: 'observe', source: 'XID 48 (pool t4)' });
    // XID 48's chain is NVIDIA's WORKFLOW_XID_48: reset, then reboot; replacing it is the SRAM threshold's call.
    expect(resolveRule(p, 't4', 48).then).toEqual(['reboot-node']);
  });

  it.each([
    [{ 'gpu-reflex.io/pool': 'a', 'alibabacloud.com/nodepool-id': 'np-1' }, 'a'],
    [{ 'alibabacloud.com/nodepool-id': 'np-1', accelerator: 'a100' }, 'np-1'],
    [{ accelerator: 'nvidia-t4' }, 'nvidia-t4'],
    [{}, 'default'],
  ])('finds the pool from labels %o → %s', (labels, want) => {
    expect(poolOf(DEFAULT_POLICY, labels)).toBe(want);
  });
});
