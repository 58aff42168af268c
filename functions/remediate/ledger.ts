/**
 * The blast-radius ledger. Node labels say who is out now, but invocations run concurrently
 * (a storm delivers hundreds of events at once): each would see the same count and all would act.
 * So a node takes a slot in the pool's ledger — one key of the state ConfigMap, written with
 * optimistic concurrency — before anything capacity-taking is done. A slot counts for the
 * blast-radius window; a node already holding one keeps it.
 */
import { updateConverging } from '../lib/converge.ts';
import type { StateStore } from '../adapters/kube/ports.ts';
import type { Json } from '../adapters/kube/model.ts';

interface Entry {
  node: string;
  at: number;
}

const keyOf = (pool: string) => `blast-radius.${pool.replace(/[^A-Za-z0-9._-]/g, '_')}`;

/**
 * Each pool's ledger lives in its own object where the store can shard (a ConfigMap per pool):
 * a storm writes every pool's ledger at once, and on one shared ConfigMap each write conflicts
 * with all the others (measured: 150 failing nodes, 32 concurrent invocations → 169 deliveries
 * sent back to the platform's retry, p99 14 s). Per pool, only that pool's faults contend.
 */
function storeFor(state: StateStore, pool: string): StateStore {
  if (!state.shard) return state;
  const slug = pool
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 40);
  // Distinct pools never share a shard by accident of the slug: a short hash of the real name.
  let h = 2166136261;
  for (let i = 0; i < pool.length; i++) h = Math.imul(h ^ pool.charCodeAt(i), 16777619) >>> 0;
  return state.shard(`ledger-${slug ? `${slug}-` : ''}${h.toString(36)}`);
}

function entriesOf(v: Json | undefined, since: number): Entry[] {
  if (!v || typeof v !== 'object' || Array.isArray(v)) return [];
  const list = (v as { entries?: unknown }).entries;
  if (!Array.isArray(list)) return [];
  return list.flatMap((e) => {
    const o = e as { node?: unknown; at?: unknown };
    return typeof o?.node === 'string' && typeof o.at === 'number' && o.at >= since ? [{ node: o.node, at: o.at }] : [];
  });
}

/** Nodes holding a slot in the pool within the window. */
export async function ledgerNodes(state: StateStore, pool: string, now: number, windowMs: number): Promise<string[]> {
  return entriesOf(await storeFor(state, pool).get(keyOf(pool)), now - windowMs).map((e) => e.node);
}

/**
 * Takes a slot for `node` when fewer than `limit` other nodes hold one within the window (or it
 * already holds one). Atomic per pool. Returns whether the node holds a slot afterwards.
 */
export async function reserveSlot(
  state: StateStore,
  pool: string,
  node: string,
  limit: number,
  now: number,
  windowMs: number,
): Promise<boolean> {
  let granted = false;
  // A pool's own faults race for its key, and all but one lose each round: kept trying while it conflicts
  // (lib/converge.ts), not thrown back to the platform's retry.
  await updateConverging(storeFor(state, pool), keyOf(pool), (cur) => {
    const live = entriesOf(cur, now - windowMs);
    granted = live.some((e) => e.node === node) || live.length < limit;
    const next = granted && !live.some((e) => e.node === node) ? [...live, { node, at: now }] : live;
    return { entries: next.map((e) => ({ node: e.node, at: e.at })) };
  });
  return granted;
}
