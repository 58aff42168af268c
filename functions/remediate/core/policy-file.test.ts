import { describe, expect, it } from 'vitest';
import { loadPolicy, loadPolicyFile, PolicyFileError } from './policy-file.ts';
import { DEFAULT_POLICY, fenceBackendOf, resolveRule } from './policy.ts';

const errorOf = (text: string, file = 'policy.yaml'): string => {
  try {
    loadPolicy(text, file);
  } catch (e) {
    expect(e).toBeInstanceOf(PolicyFileError);
    return (e as Error).message;
  }
  throw new Error('expected loadPolicy to throw');
};

describe('loadPolicy', () => {
  it('returns the defaults for an empty file', () => {
    expect(loadPolicy('', 'p.yaml')).toEqual(DEFAULT_POLICY);
  });

  it('merges a rule field by field over the default', () => {
    const p = loadPolicy('xids:\n  79:\n    then: [replace-node]\nquietPeriodMinutes: 10\n', 'p.yaml');
    expect(resolveRule(p, undefined, 79)).toMatchObject({ action: 'drain-node', then: ['replace-node'] });
    expect(p.quietPeriodMinutes).toBe(10);
    expect(p.blastRadius).toEqual(DEFAULT_POLICY.blastRadius);
  });

  it('reads JSON too', () => {
    const { policy: p, dryRun } = loadPolicyFile('{ "blastRadius": { "maxShare": 0.3 }, "dryRun": true }', 'p.json');
    expect(p.blastRadius.maxShare).toBe(0.3);
    // dryRun selects the wiring; it is no part of the policy the core obeys
    expect(dryRun).toBe(true);
    expect(p).not.toHaveProperty('dryRun');
  });

  it.each([
    [
      'dryRun: false\nblastRadius:\n  maxShare: 0.2\nxids:\n  79:\n    action: explode\n',
      'policy.yaml:6: xids.79.action: ',
    ],
    ['quietPeriodMinutes: soon\n', 'policy.yaml:1: quietPeriodMinutes: '],
    ['blastRadius:\n  maxShare: 2\n', 'policy.yaml:2: blastRadius.maxShare: '],
    [
      'conditions:\n  temperature:\n    action: observe\n  sunburn:\n    action: observe\n',
      'policy.yaml:4: conditions.sunburn',
    ],
    ['pools:\n  a100:\n    maxQuarantinedShare: 0.5\n    colour: red\n', 'policy.yaml:4: pools.a100.colour: '],
    [
      'xids:\n  45:\n    escalate: { count: 2, windowMinutes: 5, distinctWorkloads: 1 }\n',
      'policy.yaml:3: xids.45.escalate: XID 45 never escalates',
    ],
    [
      'conditions:\n  monitoring-degraded:\n    action: drain-node\n',
      'policy.yaml:3: conditions.monitoring-degraded.action: expected observe or ignore',
    ],
    ['xids:\n  79: [\n', 'policy.yaml:'],
    ['a: 1\na: 2\n', 'policy.yaml:2: '],
  ])('names the file, line and field of an error (%#)', (text, want) => {
    expect(errorOf(text)).toContain(want);
  });

  it('lists the allowed actions when one is misspelt', () => {
    expect(errorOf('xids:\n  79:\n    action: drain\n')).toMatch(/policy\.yaml:3: xids\.79\.action: .*drain-node/);
  });

  it('merges approvals field by field and names a bad approver list by line', () => {
    expect(loadPolicy('approvals:\n  approvers: [cli:alice]\n', 'p.yaml').approvals).toEqual({
      ttlMinutes: DEFAULT_POLICY.approvals.ttlMinutes,
      approvers: ['cli:alice'],
    });
    expect(loadPolicy('approvals:\n  ttlMinutes: 15\n', 'p.yaml').approvals).toEqual({ ttlMinutes: 15, approvers: [] });
    expect(errorOf('approvals:\n  ttlMinutes: 0\n')).toMatch(/policy\.yaml:2: approvals\.ttlMinutes: /);
    expect(errorOf('approvals:\n  approvers: [""]\n')).toMatch(/policy\.yaml:2: approvals\.approvers\.0: /);
  });

  it('points a JSON error at its line', () => {
    expect(errorOf('{\n  "xids": {\n    "48": { "action": 7 }\n  }\n}', 'p.json')).toContain(
      'p.json:3: xids.48.action',
    );
  });
});

describe('the example policy file', () => {
  it('loads and says what it claims', async () => {
    const { readFile } = await import('node:fs/promises');
    const text = await readFile(new URL('../../../examples/remediation-policy.yaml', import.meta.url), 'utf8');
    const p = loadPolicy(text, 'remediation-policy.yaml');
    expect(resolveRule(p, undefined, 48).then).toEqual(['replace-node']);
    expect(resolveRule(p, 't4-inference', 94).action).toBe('quarantine-gpu');
    expect(resolveRule(p, undefined, 94).action).toBe('restart-workload');
    expect(resolveRule(p, undefined, { kind: 'condition', condition: 'temperature', severity: 'warning' }).action).toBe(
      'observe',
    );
    expect(p.pools['h100-train']?.maxQuarantinedShare).toBe(0.3);
    expect(resolveRule(p, 'h100-train', { kind: 'xid', xid: 79, gpuModel: 'NVIDIA H100 80GB HBM3' })).toMatchObject({
      action: 'reboot-node',
      profile: 'h100-train-79',
    });
    expect(resolveRule(p, 't4-inference', { kind: 'xid', xid: 13, gpuModel: 'Tesla T4' }).escalate?.count).toBe(5);
    expect(fenceBackendOf(p, 'h100-train')).toBe('nvidia-plugin');
    expect(fenceBackendOf(p, 't4-inference')).toBe('ack-file');
    expect(p.fence.nvidiaPlugin).toEqual({
      namespace: 'gpu-operator',
      selector: { app: 'nvidia-device-plugin-daemonset' },
    });
  });
});
