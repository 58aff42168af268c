import { describe, expect, it } from 'vitest';
import { ConflictError } from '../adapters/errors.ts';
import { FakeCluster } from '../adapters/kube/fake.ts';
import { FakeStateStore } from '../adapters/kube/fake-stores.ts';
import { CONFLICT_ROUNDS } from './converge.ts';
import { closeApproval, getApproval, listApprovals, recordApproval, type ApprovalRecord } from './approvals.ts';

const rec = (id: string, over: Partial<ApprovalRecord> = {}): ApprovalRecord => ({
  id,
  node: 'gpu-a100-07',
  incident: 'gpu-a100-07/GPU-1/xid-79',
  action: 'drain-node',
  scope: 'node',
  target: { gpus: ['GPU-1'], pods: ['ml/w-0'] },
  requestedAt: '2026-11-21T03:00:00.000Z',
  expiresAt: '2026-11-21T04:00:00.000Z',
  approvers: [],
  status: 'open',
  ...over,
});
const AT = new Date('2026-11-21T03:10:00.000Z');

describe('the approval store', () => {
  it('keeps the first record of an id: a redelivered request does not move its expiry', async () => {
    const state = new FakeStateStore(new FakeCluster());
    await recordApproval(state, rec('apr-aaaa1111'));
    const kept = await recordApproval(state, rec('apr-aaaa1111', { expiresAt: '2026-11-21T05:00:00.000Z' }));
    expect(kept.expiresAt).toBe('2026-11-21T04:00:00.000Z');
    expect(await getApproval(state, 'apr-aaaa1111')).toEqual(rec('apr-aaaa1111'));
  });

  it('closes an open approval once; a second close changes nothing and says so', async () => {
    const state = new FakeStateStore(new FakeCluster());
    await recordApproval(state, rec('apr-bbbb2222'));
    const first = await closeApproval(state, 'apr-bbbb2222', 'approved-applied', {
      decidedBy: 'cli:alice',
      at: AT,
      note: 'went ahead',
    });
    expect(first).toEqual({
      closed: true,
      record: {
        ...rec('apr-bbbb2222'),
        status: 'approved-applied',
        decidedBy: 'cli:alice',
        decidedAt: AT.toISOString(),
        note: 'went ahead',
      },
    });
    const second = await closeApproval(state, 'apr-bbbb2222', 'rejected', {
      decidedBy: 'cli:bob',
      at: new Date(AT.getTime() + 60_000),
    });
    expect(second).toEqual({ closed: false, record: first.record });
    expect(await getApproval(state, 'apr-bbbb2222')).toEqual(first.record);
  });

  it('closes nothing for an unknown id, and lists the readable records oldest first', async () => {
    const state = new FakeStateStore(new FakeCluster());
    expect(await closeApproval(state, 'apr-none0000', 'expired', { at: AT })).toEqual({ closed: false });
    expect(await getApproval(state, 'apr-none0000')).toBeUndefined();
    await recordApproval(state, rec('apr-late0000', { requestedAt: '2026-11-21T03:05:00.000Z' }));
    await recordApproval(state, rec('apr-early000'));
    await state.update('approval.apr-junk0000', () => ({ not: 'a record' }));
    expect((await listApprovals(state)).map((a) => a.id)).toEqual(['apr-early000', 'apr-late0000']);
  });

  it('records and closes through a storm of conflicts (each 409 is another write landed), until the rounds run out', async () => {
    const state = new FakeStateStore(new FakeCluster());
    // The store as a storm finds it: its update (its own tries spent) conflicts `left` more times.
    let left = CONFLICT_ROUNDS - 1;
    const contended = Object.assign(Object.create(state) as FakeStateStore, {
      shard: undefined,
      update: (key: string, fn: Parameters<FakeStateStore['update']>[1]) => {
        if (left-- > 0) return Promise.reject(new ConflictError(`updating ${key}: still conflicting after 5 attempts`));
        return state.update(key, fn);
      },
    });
    expect(await recordApproval(contended, rec('apr-cccc3333'))).toEqual(rec('apr-cccc3333'));
    left = CONFLICT_ROUNDS - 1;
    expect((await closeApproval(contended, 'apr-cccc3333', 'rejected', { at: AT })).closed).toBe(true);
    left = CONFLICT_ROUNDS;
    await expect(recordApproval(contended, rec('apr-dddd4444'))).rejects.toBeInstanceOf(ConflictError);
  });
});
