/**
 * The blast-radius ledger. Node labels say who is out now, but invocations run concurrently
 * (a storm delivers hundreds of events at once): each would see the same count and all would act.
 * So a node takes a slot in the pool's ledger — one key of the state ConfigMap, written with
 * optimistic concurrency — before anything capacity-taking is done. A slot counts for the
 * blast-radius window; a node already holding one keeps it.
 */
import type { StateStore } from '../adapters/kube/ports.ts';
import type { Json } from '../adapters/kube/model.ts';

interface Entry {
  node: string;
  at: number;
}

const keyOf = (pool: string) => `blast-radius.${pool.replace(/[^A-Za-z0-9._-]/g, '_')}`;

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
  return entriesOf(await state.get(keyOf(pool)), now - windowMs).map((e) => e.node);
}

/**
 * Takes a slot for `node` when fewer than `limit` other nodes hold one within the window (or it
 * already holds one). Atomic per pool. Returns whether the node holds a slot afterwards.
 */
export async function reserveSlot(state: StateStore, pool: string, node: string, limit: number, now: number, windowMs: number): Promise<boolean> {
  let granted = false;
  await state.update(keyOf(pool), (cur) => {
    const live = entriesOf(cur, now - windowMs);
    granted = live.some((e) => e.node === node) || live.length < limit;
    const next = granted && !live.some((e) => e.node === node) ? [...live, { node, at: now }] : live;
    return { entries: next.map((e) => ({ node: e.node, at: e.at })) };
  });
  return granted;
}
