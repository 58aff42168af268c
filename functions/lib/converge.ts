/**
 * A state-store update tried again while it conflicts, where many writers race for one shard (a storm): the
 * blast-radius ledger (every fault of a pool, one key) and the approval store (every held-back node, one shard).
 * All but one writer lose each round and the store's own few tries may not be enough; every 409 means another's
 * write landed, so a fresh read converges. Thrown back instead, the platform's retry waits seconds and redoes every
 * read of the invocation.
 */
import { ConflictError } from '../adapters/errors.ts';
import type { Json } from '../adapters/kube/model.ts';
import type { StateStore } from '../adapters/kube/ports.ts';

/** Rounds of the store's own conflict retries (its few tries each) before a conflict reaches the caller. */
export const CONFLICT_ROUNDS = 12;

export async function updateConverging(
  store: Pick<StateStore, 'update'>,
  key: string,
  fn: (cur: Json | undefined) => Json | undefined,
): Promise<Json | undefined> {
  for (let round = 1; ; round++) {
    try {
      return await store.update(key, fn);
    } catch (err) {
      if (!(err instanceof ConflictError) || round >= CONFLICT_ROUNDS) throw err;
    }
  }
}
