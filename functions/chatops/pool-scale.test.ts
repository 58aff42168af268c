/**
 * `pool scale` held for approval, decided in chat: closed once, then the cloud asked. The end-to-end path is
 * test/e2e/chatops-pool-scale.test.ts; here, what a refused cloud call between the two leaves.
 */
import { describe, expect, it } from 'vitest';
import type { CloudPools, NodePool } from '../adapters/alicloud/ports.ts';
import { RecordingPublisher } from '../adapters/bus.ts';
import { RecordingNotifier } from '../adapters/chat/notifier.ts';
import { manualClock } from '../adapters/clock.ts';
import { TransientError } from '../adapters/errors.ts';
import { dryRunPorts } from '../adapters/kube/dry-run.ts';
import { fakeKube } from '../adapters/kube/fake.ts';
import { silentLogger } from '../adapters/logger.ts';
import { getApproval } from '../lib/approvals.ts';
import { AutoscalePolicySchema } from '../lib/pool-policy.ts';
import type { CommandPorts } from './command-ports.ts';
import { CHAT_APPROVALS_SHARD, decidePoolScale, poolScale, type PoolPorts } from './pool-scale.ts';

function setup(o: { dryRun?: boolean } = {}) {
  const clock = manualClock(Date.parse('2026-12-06T02:00:00.000Z'));
  const kube = fakeKube({ clock });
  const pool = { id: 'np-t4', desiredSize: 1 } as NodePool;
  const cloud = {
    refuse: 0,
    async listNodePools() {
      return [{ ...pool }];
    },
    async setDesiredSize(_id: string, size: number) {
      if (cloud.refuse > 0) {
        cloud.refuse--;
        throw new TransientError('ModifyClusterNodePool: Throttling.User');
      }
      pool.desiredSize = size;
      return { taskId: `T-${size}` };
    },
  };
  const notifier = new RecordingNotifier();
  const ports: CommandPorts = {
    // As run.ts portsFor wires a dry run: the state store's decorator keeps nothing it is asked to write.
    kube: o.dryRun ? dryRunPorts(kube, () => {}) : kube,
    publisher: new RecordingPublisher(),
    notifier,
    clock,
    logger: silentLogger,
    holder: 'test',
    dryRun: o.dryRun ?? false,
  };
  const pools: PoolPorts = {
    policy: AutoscalePolicySchema.parse({ pools: { 'np-t4': { min: 1, max: 10, maxStep: 2 } } }),
    cloud: cloud as unknown as CloudPools,
  };
  return {
    kube,
    pool,
    cloud,
    notifier,
    hold: (size: number) => poolScale(ports, { pools, approvalTtlMinutes: 30, pool: 'np-t4', size, usage: '' }),
    approve: async (id: string, by: string) => (await decidePoolScale(ports, pools, id, 'approved', by))?.answer,
  };
}

describe('a held pool scale, asked in chat', () => {
  it('gives the asker the approval id when the chat notice fails: held, not a failed command', async () => {
    const t = setup();
    t.notifier.notify = async () => Promise.reject(new Error('chat webhook: 502'));
    // Recorded before the notice: a thrown command would leave an open approval nobody was told the id of.
    const said = await t.hold(8);
    const id = /held for approval (apr-[a-z0-9]+)/.exec(said)![1]!;
    expect(said).toContain('the chat notice failed (chat webhook: 502)');
    expect(await getApproval(t.kube.state, id, CHAT_APPROVALS_SHARD)).toMatchObject({ status: 'open' });
    expect(await t.approve(id, 'slack:U-1')).toBe(`approved ${id}: set np-t4's desired size 1 → 8 (task T-8)`);
  });
});

describe('pool scale on a pool whose desired size ACK does not give', () => {
  it('changes nothing and says why: a size not known is not one the step above maxStep can be measured from', async () => {
    const t = setup();
    t.pool.desiredSize = undefined;
    const said = await t.hold(8);
    expect(said).toContain('ACK gives no desired size for np-t4');
    expect(said).toContain('nothing changed');
    expect(t.pool.desiredSize).toBeUndefined();
  });
});

describe('a held pool scale, approved in chat', () => {
  it('is carried out by the next approve when the cloud refused it after the approval closed', async () => {
    const t = setup();
    const id = /held for approval (apr-[a-z0-9]+)/.exec(await t.hold(8))![1]!;
    t.cloud.refuse = 1;
    await expect(t.approve(id, 'slack:U-1')).rejects.toThrow(TransientError);
    // Who approved is kept; the pool was not grown.
    expect(await getApproval(t.kube.state, id, CHAT_APPROVALS_SHARD)).toMatchObject({
      status: 'approved-applied',
      decidedBy: 'slack:U-1',
    });
    expect(t.pool.desiredSize).toBe(1);
    // Asked again: the approved scale goes on (an absolute size, safe to send again).
    expect(await t.approve(id, 'slack:U-2')).toBe(
      `approved ${id} (by slack:U-1): set np-t4's desired size 1 → 8 (task T-8)`,
    );
    expect(t.pool.desiredSize).toBe(8);
    // Carried out: a later click changes nothing, even once the pool is back at 1.
    t.pool.desiredSize = 1;
    expect(await t.approve(id, 'slack:U-2')).toBe(`${id} is already approved-applied by slack:U-1: nothing more done`);
    expect(t.pool.desiredSize).toBe(1);
  });
});

describe('a held pool scale, approved after the pool moved', () => {
  it('sets nothing when the pool is no longer at the size the approval was asked from', async () => {
    const t = setup();
    const id = /held for approval (apr-[a-z0-9]+)/.exec(await t.hold(8))![1]!;
    // While the request waited, the pool grew to 9 (the autoscaler, the console): "1 → 8" is not what an approve
    // would do now — sending the absolute size 8 would shrink the pool, taking a node and its pods away.
    t.pool.desiredSize = 9;
    const said = await t.approve(id, 'slack:U-1');
    expect(said).toContain('nothing done');
    expect(said).toContain('np-t4 is at 9 now, not 1');
    expect(t.pool.desiredSize).toBe(9);
    // Not closed as approved: it still reads open, and said nothing was applied.
    expect(await getApproval(t.kube.state, id, CHAT_APPROVALS_SHARD)).toMatchObject({ status: 'open' });
  });
});

describe('a large pool scale, asked as a dry run', () => {
  it('says it would be held for approval, and gives no id: none was recorded, so none can be approved', async () => {
    const t = setup({ dryRun: true });
    const said = await t.hold(8);
    expect(said).toMatch(/^dry run, nothing changed: pool scale np-t4 1 → 8 adds 7 nodes, more than its maxStep 2/);
    expect(said).toContain('would be held for approval');
    expect(said).not.toMatch(/apr-/);
    expect(said).not.toContain('approve');
    expect(t.notifier.notices).toEqual([]);
    expect(t.pool.desiredSize).toBe(1);
  });
});
