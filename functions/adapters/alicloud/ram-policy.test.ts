import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ACK_KUBECONFIG_ACTION } from '../kubeconfig/ack.ts';
import { RAM_ACTIONS } from './ports.ts';

const policy = JSON.parse(
  readFileSync(new URL('../../../infra/alicloud/ram-policy.json', import.meta.url), 'utf8'),
) as { Version: string; Statement: { Effect: string; Action: string[]; Resource: string[] }[] };

describe('infra/alicloud/ram-policy.json', () => {
  const granted = policy.Statement.flatMap((s) => s.Action);

  it('grants exactly the RAM actions the adapters name, each once', () => {
    expect([...granted].sort()).toEqual([...new Set([...Object.values(RAM_ACTIONS), ACK_KUBECONFIG_ACTION])].sort());
  });

  it('allows only (no Deny needed), uses no wildcard action, and writes to ECS only to reboot', () => {
    expect(policy.Version).toBe('1');
    expect(policy.Statement.every((s) => s.Effect === 'Allow')).toBe(true);
    expect(granted.filter((a) => a.includes('*'))).toEqual([]);
    expect(granted.filter((a) => a.startsWith('ess:'))).toEqual([]);
    expect(granted.filter((a) => a.startsWith('ecs:') && !a.startsWith('ecs:Describe'))).toEqual([
      'ecs:RebootInstance',
    ]);
  });

  it("limits the node-pool writes and the cluster's kubeconfig to the one cluster", () => {
    for (const action of ['cs:ModifyClusterNodePool', 'cs:RemoveNodePoolNodes', ACK_KUBECONFIG_ACTION]) {
      const st = policy.Statement.find((s) => s.Action.includes(action))!;
      expect(st.Resource).toEqual(['acs:cs:*:*:cluster/${ACK_CLUSTER_ID}']);
    }
  });
});
