import { describe, expect, it } from 'vitest';
import { FakeCluster } from '../adapters/kube/fake-cluster.ts';
import { FakeStateStore } from '../adapters/kube/fake-stores.ts';
import type { Applied } from '../lib/apply.ts';
import type { Plan } from './core/types.ts';
import { nodePoolFrom, taskFrom } from '../adapters/alicloud/records.ts';
import { NODEPOOL_LABEL } from '../adapters/alicloud/ports.ts';
import type { NodeInfo } from '../adapters/kube/model.ts';
import { NotFoundError, TransientError } from '../adapters/errors.ts';
import { stepReplace } from './core/replace.ts';
import type { ReplacementRecord } from '../lib/replacements.ts';
import { aliCloudReplaceReader, replacedPlan, withReplacementNoted } from './replacements.ts';

/** The slice of a plan the record reads: an open incident at replace-node, and the pool's removal asked. */
function removing(node: string): Plan {
  const replace = { pool: 'np-a100', instanceId: 'i-0abc', at: '2026-11-21T03:00:00.000Z' };
  return {
    target: { node, gpus: ['GPU-1'], migInstances: [], pods: [] },
    cloud: [{ kind: 'replace', step: 'remove', node, pool: replace.pool, instanceId: replace.instanceId }],
    nextState: { incidents: [{ key: `${node}/xid79`, phase: 'awaiting-repair', replace }] },
  } as unknown as Plan;
}

const answered = (taskId: string): { applied: Applied } => ({
  applied: { evictions: [], notices: [], cloud: [{ result: 'done', taskId }] },
});

describe('withReplacementNoted', () => {
  it('has the replacement on record before the cloud is asked: a crash in the call leaves it to follow', async () => {
    const state = new FakeStateStore(new FakeCluster());
    let seen: unknown;
    const act = async () => {
      seen = await state.get('replace.n1');
      throw new Error('killed while asking ACK');
    };
    await expect(withReplacementNoted(state, removing('n1'), act)).rejects.toThrow('killed');
    expect(seen).toMatchObject({ node: 'n1', incident: 'n1/xid79', pool: 'np-a100', instanceId: 'i-0abc' });
    expect(await state.get('replace.n1')).not.toHaveProperty('taskId');
  });

  it("records the removal's task id once the applier answered it", async () => {
    const state = new FakeStateStore(new FakeCluster());
    const out = await withReplacementNoted(state, removing('n1'), async () => answered('T-42'));
    expect(out.applied.cloud[0]?.taskId).toBe('T-42');
    expect(await state.get('replace.n1')).toMatchObject({ node: 'n1', taskId: 'T-42' });
  });

  it('only carries out a plan that replaces nothing', async () => {
    const state = new FakeStateStore(new FakeCluster());
    const plan = { ...removing('n1'), cloud: [] } as Plan;
    await withReplacementNoted(state, plan, async () => answered('T-1'));
    await withReplacementNoted(state, undefined, async () => answered('T-2'));
    expect(await state.getAll()).toEqual({});
  });
});

describe("a removal's ACK task in a state ACK does not document", () => {
  const record: ReplacementRecord = {
    node: 'n1',
    incident: 'n1/xid79',
    pool: 'np-a100',
    instanceId: 'i-0abc',
    since: Date.parse('2026-11-21T03:00:00.000Z'),
    newNode: 'n9',
    removeAt: Date.parse('2026-11-21T03:20:00.000Z'),
    taskId: 'T-9',
  };

  it("is read as unknown with ACK's word, never as running or done", async () => {
    const cloud = {
      listNodePools: async () => [],
      task: async (id: string) => taskFrom(id, { state: 'canceled' }),
    };
    const reader = aliCloudReplaceReader(cloud, { list: async () => [] }, {});
    expect(await reader.task('T-9')).toEqual({ state: 'unknown', raw: 'canceled' });
  });

  it("names ACK's word in the report that closes the replacement once the node is gone", () => {
    const plan = replacedPlan(record, { state: 'unknown', raw: 'canceled' });
    expect(plan.reason).toContain("its ACK task T-9 answers state 'canceled', which gpu-reflex does not know");
  });
});

describe("a replacement's pool whose desired size ACK does not give", () => {
  // What the adapter reads from a DescribeClusterNodePools entry without `scaling_group.desired_size`.
  const pool = nodePoolFrom({
    nodepool_info: { nodepool_id: 'np-a100', name: 'a100' },
    status: { state: 'active' },
    scaling_group: { instance_types: ['ecs.gn7e-c16g1.4xlarge'] },
  });
  const node = {
    name: 'n1',
    labels: { [NODEPOOL_LABEL]: 'np-a100' },
    providerId: 'cn-hangzhou.i-0abc',
  } as unknown as NodeInfo;
  const reader = aliCloudReplaceReader(
    { listNodePools: async () => [pool], task: async (id: string) => taskFrom(id, { state: 'running' }) },
    { list: async () => [] },
    { 'np-a100': { max: 10 } },
  );

  it('starts no replacement: a grow planned from a size not known could lower the pool (8 "grown" to 1)', async () => {
    const facts = await reader.facts(node, undefined, new Set());
    expect(facts.refused).toContain('ACK gives no desired size for node pool a100 (np-a100)');
    expect(facts.pool).toBeUndefined();
  });

  it('follows one under way without a size to grow from: its removal still goes on, no grow is asked again', async () => {
    const record: ReplacementRecord = {
      node: 'n1',
      incident: 'n1/xid79',
      pool: 'np-a100',
      instanceId: 'i-0abc',
      since: Date.parse('2026-11-21T03:00:00.000Z'),
    };
    const facts = await reader.facts(node, record, new Set());
    expect(facts.pool).toBeUndefined();
    expect(facts.instanceId).toBe('i-0abc');
  });
});

describe('a removal whose ACK task ACK no longer has', () => {
  const node = {
    name: 'n1',
    labels: { [NODEPOOL_LABEL]: 'np-a100' },
    providerId: 'cn-hangzhou.i-0abc',
  } as unknown as NodeInfo;
  const record: ReplacementRecord = {
    node: 'n1',
    incident: 'n1/xid79',
    pool: 'np-a100',
    instanceId: 'i-0abc',
    since: Date.parse('2026-11-21T03:00:00.000Z'),
    newNode: 'n9',
    removeAt: Date.parse('2026-11-21T03:20:00.000Z'),
    taskId: 'T-9',
  };
  const pool = nodePoolFrom({
    nodepool_info: { nodepool_id: 'np-a100', name: 'a100' },
    status: { state: 'active', total_nodes: 4 },
    scaling_group: { desired_size: 4, instance_types: ['ecs.gn7e-c16g1.4xlarge'] },
  });
  const reader = (err: Error) =>
    aliCloudReplaceReader(
      { listNodePools: async () => [pool], task: async () => Promise.reject(err) },
      { list: async () => [] },
      { 'np-a100': { max: 10 } },
    );

  it('stops no sweep (before, every sweep failed on it, for every node): read as no task, so the removal is asked again', async () => {
    // ACK purged the task (DescribeTaskInfo: 404).
    const facts = await reader(new NotFoundError('cs:DescribeTaskInfo: ErrorTaskNotFound')).facts(
      node,
      record,
      new Set(),
    );
    expect(facts.removal).toBeUndefined();
    const r = { at: '2026-11-21T03:00:00.000Z', pool: 'np-a100', instanceId: 'i-0abc', to: 5, newNode: 'n9' };
    const step = stepReplace(
      { key: 'n1/xid79', phase: 'awaiting-repair' } as never,
      { ...r, readyAt: '2026-11-21T03:20:00.000Z' },
      { name: 'n1' } as never,
      facts,
      new Date('2026-11-21T04:00:00.000Z'),
      {} as never,
    );
    expect(step).toMatchObject({ kind: 'act', cloud: { kind: 'replace', step: 'remove', instanceId: 'i-0abc' } });
  });

  it('carries the task id of a removal it read, so a removal ACK says succeeded but did not happen names its task', async () => {
    const facts = await aliCloudReplaceReader(
      { listNodePools: async () => [pool], task: async (id: string) => taskFrom(id, { state: 'success' }) },
      { list: async () => [] },
      { 'np-a100': { max: 10 } },
    ).facts(node, record, new Set());
    expect(facts.removal).toEqual({ state: 'success', taskId: 'T-9' });
  });

  it('is still thrown when the task cannot be read for now: the sweep retries rather than act on a guess', async () => {
    await expect(
      reader(new TransientError('cs:DescribeTaskInfo: ServiceUnavailable')).facts(node, record, new Set()),
    ).rejects.toThrow(TransientError);
  });
});
