/** QuotaOps, StateStore and LeaseOps contracts; run by describePortContracts (contract.ts). */
import { beforeEach, describe, expect, it } from 'vitest';
import { BadInputError, ConflictError } from '../errors.ts';
import type { KubeHarness } from './contract.ts';

export function storeContracts(harness: () => KubeHarness): void {
  let h: KubeHarness;
  beforeEach(() => {
    h = harness();
  });

  describe('QuotaOps', () => {
    beforeEach(async () => {
      await h.seedNamespace('team-q');
    });

    it('applyQuota creates, leaves an equal quota alone, and replaces a different one', async () => {
      expect(await h.quotas.getQuota('team-q', 'gpu')).toBeUndefined();
      expect(
        await h.quotas.applyQuota('team-q', 'gpu', {
          hard: { 'requests.nvidia.com/gpu': '8' },
          labels: { owner: 'gpu-reflex' },
        }),
      ).toBe('created');
      expect(await h.quotas.applyQuota('team-q', 'gpu', { hard: { 'requests.nvidia.com/gpu': '8' } })).toBe(
        'unchanged',
      );
      expect(await h.quotas.applyQuota('team-q', 'gpu', { hard: { 'requests.nvidia.com/gpu': '4' } })).toBe('updated');
      const q = await h.quotas.getQuota('team-q', 'gpu');
      expect(q?.hard).toEqual({ 'requests.nvidia.com/gpu': '4' });
      expect(q?.labels).toMatchObject({ owner: 'gpu-reflex' });
      expect((await h.quotas.listQuotas('team-q')).map((x) => x.name)).toEqual(['gpu']);
    });

    it('applyQuota with a basis writes only over the hard values read (null: no quota there)', async () => {
      const hard = (n: string) => ({ hard: { 'requests.nvidia.com/gpu': n } });
      expect(await h.quotas.applyQuota('team-q', 'based', { ...hard('8'), basis: null })).toBe('created');
      await expect(h.quotas.applyQuota('team-q', 'based', { ...hard('6'), basis: null })).rejects.toThrow(
        ConflictError,
      );
      const read = (await h.quotas.getQuota('team-q', 'based'))!;
      await h.quotas.applyQuota('team-q', 'based', hard('4'));
      await expect(h.quotas.applyQuota('team-q', 'based', { ...hard('2'), basis: read.hard })).rejects.toThrow(
        ConflictError,
      );
      expect((await h.quotas.getQuota('team-q', 'based'))?.hard).toEqual({ 'requests.nvidia.com/gpu': '4' });
      // Another write that leaves the values (labels; the quota controller's status.used) is no conflict.
      await h.quotas.applyQuota('team-q', 'based', { ...hard('4'), labels: { team: 'q' } });
      expect(
        await h.quotas.applyQuota('team-q', 'based', { ...hard('2'), basis: { 'requests.nvidia.com/gpu': '4' } }),
      ).toBe('updated');
    });

    it('deleteQuota deletes only the version read, and is idempotent', async () => {
      await h.quotas.applyQuota('team-q', 'gone', { hard: { 'requests.nvidia.com/gpu': '8' } });
      const read = (await h.quotas.getQuota('team-q', 'gone'))!;
      await h.quotas.applyQuota('team-q', 'gone', { hard: { 'requests.nvidia.com/gpu': '4' } });
      await expect(h.quotas.deleteQuota('team-q', 'gone', read.resourceVersion)).rejects.toThrow(ConflictError);
      const now = (await h.quotas.getQuota('team-q', 'gone'))!;
      expect(await h.quotas.deleteQuota('team-q', 'gone', now.resourceVersion)).toBe('deleted');
      expect(await h.quotas.getQuota('team-q', 'gone')).toBeUndefined();
      expect(await h.quotas.deleteQuota('team-q', 'gone', now.resourceVersion)).toBe('absent');
    });

    it('applyLimitRange creates, leaves an equal one alone, and replaces a different one', async () => {
      const limits = [{ type: 'Container', default: { 'nvidia.com/gpu': '1' }, max: { 'nvidia.com/gpu': '4' } }];
      expect(await h.quotas.getLimitRange('team-q', 'gpu')).toBeUndefined();
      expect(await h.quotas.applyLimitRange('team-q', 'gpu', { limits })).toBe('created');
      expect(await h.quotas.applyLimitRange('team-q', 'gpu', { limits })).toBe('unchanged');
      const tighter = [{ type: 'Container', default: { 'nvidia.com/gpu': '1' }, max: { 'nvidia.com/gpu': '2' } }];
      expect(await h.quotas.applyLimitRange('team-q', 'gpu', { limits: tighter })).toBe('updated');
      expect((await h.quotas.getLimitRange('team-q', 'gpu'))?.limits).toEqual(tighter);
      expect((await h.quotas.listLimitRanges('team-q')).map((x) => x.name)).toEqual(['gpu']);
    });
  });

  describe('StateStore', () => {
    it('update creates the store, passes the current value, and undefined deletes the key', async () => {
      expect(await h.state.get('cooldown.c-n1')).toBeUndefined();
      expect(await h.state.update('cooldown.c-n1', (cur) => (cur === undefined ? { until: 100 } : cur))).toEqual({
        until: 100,
      });
      expect(await h.state.update('cooldown.c-n1', (cur) => ({ seen: cur ?? null }))).toEqual({ seen: { until: 100 } });
      await h.state.update('other', () => 1);
      expect(await h.state.getAll()).toEqual({ 'cooldown.c-n1': { seen: { until: 100 } }, other: 1 });
      expect(await h.state.update('cooldown.c-n1', () => undefined)).toBeUndefined();
      expect(await h.state.get('cooldown.c-n1')).toBeUndefined();
      expect(await h.state.get('other')).toBe(1);
    });

    it('refuses a key a ConfigMap cannot hold, writing nothing', async () => {
      await expect(h.state.update('no/slashes', () => 1)).rejects.toBeInstanceOf(BadInputError);
      expect(await h.state.getAll()).toEqual({});
    });

    it('concurrent updates of one key lose no increment', async () => {
      const inc = (cur: unknown): number => (typeof cur === 'number' ? cur : 0) + 1;
      await Promise.all([1, 2, 3, 4].map(() => h.state.update('counter', inc)));
      expect(await h.state.get('counter')).toBe(4);
    });
  });

  describe('LeaseOps', () => {
    it('only one holder at a time; the holder re-acquiring renews', async () => {
      const a = await h.leases.tryAcquire('rebalance-pool-a', 'fn-1', 60, h.clock);
      expect(a.acquired).toBe(true);
      expect(a.lease).toMatchObject({ holder: 'fn-1', durationS: 60, expiresAtMs: h.clock.now() + 60_000 });
      const b = await h.leases.tryAcquire('rebalance-pool-a', 'fn-2', 60, h.clock);
      expect(b).toMatchObject({ acquired: false, lease: { holder: 'fn-1' } });
      await h.clock.advance(30_000);
      const again = await h.leases.tryAcquire('rebalance-pool-a', 'fn-1', 60, h.clock);
      expect(again.acquired).toBe(true);
      expect(again.lease.expiresAtMs).toBe(h.clock.now() + 60_000);
    });

    it.each([
      ['', 60],
      ['fn-1', 0],
      ['fn-1', 1.5],
    ])('refuses holder %j with duration %s', async (holder, durationS) => {
      await expect(h.leases.tryAcquire('rebalance-pool-d', holder, durationS, h.clock)).rejects.toBeInstanceOf(
        BadInputError,
      );
      expect(await h.leases.get('rebalance-pool-d')).toBeUndefined();
    });

    it('an expired lease is taken over, and the old holder can no longer renew or release it', async () => {
      await h.leases.tryAcquire('rebalance-pool-b', 'fn-1', 60, h.clock);
      await h.clock.advance(61_000);
      expect((await h.leases.tryAcquire('rebalance-pool-b', 'fn-2', 60, h.clock)).acquired).toBe(true);
      expect(await h.leases.renew('rebalance-pool-b', 'fn-1', h.clock)).toBe(false);
      expect(await h.leases.release('rebalance-pool-b', 'fn-1')).toBe(false);
      expect((await h.leases.get('rebalance-pool-b'))?.holder).toBe('fn-2');
    });

    it('renew extends the holding; release frees it for others at once', async () => {
      await h.leases.tryAcquire('rebalance-pool-c', 'fn-1', 60, h.clock);
      await h.clock.advance(50_000);
      expect(await h.leases.renew('rebalance-pool-c', 'fn-1', h.clock)).toBe(true);
      await h.clock.advance(50_000);
      expect((await h.leases.tryAcquire('rebalance-pool-c', 'fn-2', 60, h.clock)).acquired).toBe(false);
      expect(await h.leases.release('rebalance-pool-c', 'fn-1')).toBe(true);
      // A free lease is no object (a fleet keeps no Lease per node it ever remediated).
      expect(await h.leases.get('rebalance-pool-c')).toBeUndefined();
      expect(await h.leases.release('rebalance-pool-c', 'fn-1')).toBe(false);
      expect((await h.leases.tryAcquire('rebalance-pool-c', 'fn-2', 60, h.clock)).acquired).toBe(true);
    });
  });
}
