/** The blast-radius ledger: one shard per pool where the store can shard, conflicts absorbed in place. */
import { describe, expect, it } from 'vitest';
import { ConflictError } from '../adapters/errors.ts';
import type { Json } from '../adapters/kube/model.ts';
import type { StateStore } from '../adapters/kube/ports.ts';
import { CONFLICT_ROUNDS } from '../lib/converge.ts';
import { ledgerNodes, reserveSlot } from './ledger.ts';

/** An in-memory store that can shard and can be told to lose the next `conflicts` updates. */
class MemStore implements StateStore {
  readonly data = new Map<string, Json>();
  readonly shards = new Map<string, MemStore>();
  updates = 0;
  constructor(public conflicts = 0) {}
  async get(key: string) {
    return this.data.get(key);
  }
  async getAll() {
    return Object.fromEntries(this.data);
  }
  async update<T extends Json>(key: string, fn: (cur: Json | undefined) => T | undefined) {
    this.updates++;
    const next = fn(this.data.get(key));
    if (this.conflicts > 0) {
      this.conflicts--;
      throw new ConflictError('updating state: still conflicting after 5 attempts');
    }
    if (next === undefined) this.data.delete(key);
    else this.data.set(key, next);
    return next;
  }
  shard(name: string): StateStore {
    let s = this.shards.get(name);
    if (!s) this.shards.set(name, (s = new MemStore(this.conflicts)));
    return s;
  }
}

const T = Date.parse('2026-11-21T03:00:00Z');
const HOUR = 3_600_000;

describe('the blast-radius ledger', () => {
  it('keeps each pool in its own shard, so one pool never waits on another', async () => {
    const store = new MemStore();
    expect(await reserveSlot(store, 'a100 train', 'n1', 2, T, HOUR)).toBe(true);
    expect(await reserveSlot(store, 'h100', 'n2', 2, T, HOUR)).toBe(true);
    expect(store.data.size).toBe(0);
    expect([...store.shards.keys()]).toHaveLength(2);
    expect([...store.shards.keys()].every((k) => /^ledger-[a-z0-9-]+$/.test(k) && k.length <= 63)).toBe(true);
    expect(await ledgerNodes(store, 'a100 train', T, HOUR)).toEqual(['n1']);
    expect(await ledgerNodes(store, 'h100', T, HOUR)).toEqual(['n2']);
  });

  it('gives distinct pools distinct shards even when their names slug alike', async () => {
    const store = new MemStore();
    await reserveSlot(store, 'Pool_A', 'n1', 1, T, HOUR);
    await reserveSlot(store, 'pool-a', 'n2', 1, T, HOUR);
    expect(store.shards.size).toBe(2);
  });

  it.each([
    ['grants while fewer than the limit hold a slot', ['n1'], 'n2', 2, true],
    ['refuses when the limit is reached', ['n1', 'n2'], 'n3', 2, false],
    ['keeps the slot of a node that already holds one', ['n1', 'n2'], 'n2', 2, true],
  ])('%s', async (_name, holders, node, limit, granted) => {
    const store = new MemStore();
    for (const h of holders) await reserveSlot(store, 'p', h, 10, T, HOUR);
    expect(await reserveSlot(store, 'p', node, limit, T + 1000, HOUR)).toBe(granted);
    expect((await ledgerNodes(store, 'p', T + 1000, HOUR)).sort()).toEqual(
      granted ? [...new Set([...holders, node])].sort() : [...holders].sort(),
    );
  });

  it('forgets slots older than the window', async () => {
    const store = new MemStore();
    await reserveSlot(store, 'p', 'n1', 1, T, HOUR);
    expect(await reserveSlot(store, 'p', 'n2', 1, T + HOUR + 1, HOUR)).toBe(true);
    expect(await ledgerNodes(store, 'p', T + HOUR + 1, HOUR)).toEqual(['n2']);
  });

  it('absorbs a storm of conflicts in place instead of failing the invocation', async () => {
    const store = new MemStore(CONFLICT_ROUNDS - 1);
    expect(await reserveSlot(store, 'p', 'n1', 1, T, HOUR)).toBe(true);
    expect(await ledgerNodes(store, 'p', T, HOUR)).toEqual(['n1']);
  });

  it('lets the platform retry once the conflicts outlast its rounds', async () => {
    const store = new MemStore(CONFLICT_ROUNDS);
    await expect(reserveSlot(store, 'p', 'n1', 1, T, HOUR)).rejects.toBeInstanceOf(ConflictError);
    expect([...store.shards.values()][0]!.updates).toBe(CONFLICT_ROUNDS);
  });

  it('uses the store itself when it cannot shard', async () => {
    const plain: StateStore = {
      get: async () => undefined,
      getAll: async () => ({}),
      update: async (_k, fn) => fn(undefined),
    };
    expect(await reserveSlot(plain, 'p', 'n1', 1, T, HOUR)).toBe(true);
  });
});
