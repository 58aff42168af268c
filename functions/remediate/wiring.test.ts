import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { capabilitiesFor } from './facts.ts';
import { wireRemediation } from './wiring.ts';

const dir = mkdtempSync(join(tmpdir(), 'remediation-wiring-'));
const KUBECONFIG = join(dir, 'kubeconfig');
writeFileSync(
  KUBECONFIG,
  'apiVersion: v1\nkind: Config\nclusters: [{ name: c, cluster: { server: "http://127.0.0.1:9" } }]\nusers: [{ name: u, user: {} }]\ncontexts: [{ name: x, context: { cluster: c, user: u } }]\ncurrent-context: x\n',
);
const CLOUD = {
  ALIBABA_CLOUD_REGION_ID: 'cn-hangzhou',
  ACK_CLUSTER_ID: 'c1',
  ALIBABA_CLOUD_ACCESS_KEY_ID: 'k',
  ALIBABA_CLOUD_ACCESS_KEY_SECRET: 's',
};

describe('remediation wiring: the cloud repair', () => {
  it('has no cloud hands unless REMEDIATION_REPAIR asks, so the planner tells a person', async () => {
    const deps = await wireRemediation('remediate', { KUBECONFIG, LOG_LEVEL: 'error', ...CLOUD });
    expect(deps.cloud).toBeUndefined();
    expect(deps.capabilities).toBeUndefined();
  });

  it('reboots and replaces through Alibaba Cloud with REMEDIATION_REPAIR=alicloud', async () => {
    const deps = await wireRemediation('remediate', {
      KUBECONFIG,
      LOG_LEVEL: 'error',
      REMEDIATION_REPAIR: 'alicloud',
      ...CLOUD,
    });
    expect(deps.cloud).toBeDefined();
    expect(deps.replacements).toBeDefined();
    expect(deps.capabilities).toEqual({ reboot: true, replace: true });
    // A node with no ECS instance behind it is a person's to repair, and the words say why.
    expect(deps.unreachable?.({ providerId: 'cn-hangzhou.i-bp1abc' } as never)).toBeUndefined();
    expect(deps.unreachable?.({} as never)).toBe('it names no ECS instance: spec.providerID unset');
    const caps = await capabilitiesFor(deps, { name: 'idc-gpu-0', labels: {} } as never);
    expect(caps).toEqual({
      reboot: false,
      replace: false,
      unreachable: 'it names no ECS instance: spec.providerID unset',
    });
    expect(
      await capabilitiesFor(deps, { name: 'ack-gpu-0', labels: {}, providerId: 'cn-hangzhou.i-bp1abc' } as never),
    ).toEqual({ reboot: true, replace: true });
  });

  it('names what is wrong: an unknown repair, or the cloud settings it needs', async () => {
    await expect(
      wireRemediation('remediate', { KUBECONFIG, LOG_LEVEL: 'error', REMEDIATION_REPAIR: 'aws' }),
    ).rejects.toThrow(/REMEDIATION_REPAIR: /);
    await expect(
      wireRemediation('remediate', { KUBECONFIG, LOG_LEVEL: 'error', REMEDIATION_REPAIR: 'alicloud' }),
    ).rejects.toThrow('ALIBABA_CLOUD_REGION_ID is not set');
  });
});
