import { describe, expect, it } from 'vitest';
import { nodePoolFrom, taskFrom } from './records.ts';

describe('taskFrom (DescribeTaskInfo)', () => {
  it('reads the states ACK documents: running, success, failed (older docs: fail)', () => {
    expect(taskFrom('T', { state: 'running' })).toEqual({ id: 'T', state: 'running' });
    expect(taskFrom('T', { state: 'success' })).toEqual({ id: 'T', state: 'success' });
    expect(taskFrom('T', { state: 'failed', error: { code: 'X', message: 'y' } })).toEqual({
      id: 'T',
      state: 'failed',
      error: { code: 'X', message: 'y' },
    });
    expect(taskFrom('T', { state: 'fail' })).toMatchObject({ state: 'failed' });
  });

  it('reads a state ACK does not document, or none, as unknown with its word: never as running or done', () => {
    expect(taskFrom('T', { state: 'canceled' })).toEqual({ id: 'T', state: 'unknown', raw: 'canceled' });
    expect(taskFrom('T', { state: 'Success' })).toEqual({ id: 'T', state: 'unknown', raw: 'Success' });
    expect(taskFrom('T', {})).toEqual({ id: 'T', state: 'unknown', raw: '' });
    expect(taskFrom('T', { state: '' })).toEqual({ id: 'T', state: 'unknown', raw: '' });
  });
});

describe('nodePoolFrom (DescribeClusterNodePools)', () => {
  const pool = (extra: Record<string, unknown> = {}) => ({
    nodepool_info: { nodepool_id: 'np-1', name: 'a100' },
    status: { state: 'active' },
    auto_scaling: { enable: false },
    scaling_group: { instance_types: ['ecs.gn7e-c16g1.4xlarge'] },
    ...extra,
  });

  it('reads the sizes ACK gives', () => {
    const p = nodePoolFrom(
      pool({
        status: { state: 'active', total_nodes: 7 },
        auto_scaling: { enable: true, min_instances: 1, max_instances: 9 },
        scaling_group: { desired_size: 8, instance_types: [] },
      }),
    );
    expect(p).toMatchObject({ desiredSize: 8, totalNodes: 7, ackAutoScaling: { enable: true, min: 1, max: 9 } });
    expect(nodePoolFrom(pool({ scaling_group: { desired_size: '0' } })).desiredSize).toBe(0);
  });

  it('reads a size ACK does not give as unknown, never as 0 (a pool of 8 read as 0 is "grown" to 1)', () => {
    const p = nodePoolFrom(pool());
    expect(p.desiredSize).toBeUndefined();
    expect(p.totalNodes).toBeUndefined();
    expect(p.ackAutoScaling).toEqual({ enable: false });
    for (const desired of [null, '', 'eight', -1, 2.5])
      expect(nodePoolFrom(pool({ scaling_group: { desired_size: desired } })).desiredSize).toBeUndefined();
  });

  it('never takes the nodes there for the size asked: a pool still scaling has fewer', () => {
    const p = nodePoolFrom(pool({ status: { state: 'scaling', total_nodes: 4 } }));
    expect(p.desiredSize).toBeUndefined();
    expect(p.totalNodes).toBe(4);
  });
});
