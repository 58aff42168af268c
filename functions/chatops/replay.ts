/**
 * The webhook's replay guard, shared by every container: a signed request accepted once is refused
 * if it comes again within its window, whichever container it reaches. Each container's memory
 * (ReplayGuard) answers its own repeats without a round trip; the state store's `chatops-replay`
 * shard (a ConfigMap, written with optimistic concurrency) decides between containers, so two that
 * race with one captured request cannot both accept it.
 */
import { createHash } from 'node:crypto';
import type { StateStore } from '../adapters/kube/ports.ts';
import { ReplayGuard } from './core/signature.ts';

/** Port. True the first time `key` is seen within its window anywhere; false for a replay. */
export interface ReplayCheck {
  accept(key: string, nowMs: number, windowMs: number): Promise<boolean>;
}

export const REPLAY_SHARD = 'chatops-replay';
const PREFIX = 'replay.';

export class StoreReplayGuard implements ReplayCheck {
  constructor(private readonly state: StateStore) {}

  async accept(key: string, nowMs: number, windowMs: number): Promise<boolean> {
    const store = this.state.shard?.(REPLAY_SHARD) ?? this.state;
    // A ConfigMap key is [-._a-zA-Z0-9]: the signature is hashed, not stored.
    const k = PREFIX + createHash('sha256').update(key).digest('hex').slice(0, 40);
    let fresh = false;
    // The update is compare-and-swap (resourceVersion): of two racing writers one re-reads and sees the other's.
    await store.update(k, (cur) => {
      if (typeof cur === 'number' && cur > nowMs) return cur;
      fresh = true;
      return nowMs + windowMs;
    });
    if (fresh) {
      // Keys past their window are dropped as new ones come, so the shard stays small.
      const all = await store.getAll();
      for (const [old, until] of Object.entries(all)) {
        if (old.startsWith(PREFIX) && typeof until === 'number' && until <= nowMs)
          await store.update(old, (cur) => (typeof cur === 'number' && cur <= nowMs ? undefined : cur));
      }
    }
    return fresh;
  }
}

/** This container's memory first (free), then the shared store. */
export function sharedReplayGuard(state: StateStore): ReplayCheck {
  const memory = new ReplayGuard();
  const shared = new StoreReplayGuard(state);
  return {
    accept: async (key, nowMs, windowMs) =>
      memory.accept(key, nowMs, windowMs) && (await shared.accept(key, nowMs, windowMs)),
  };
}

/**
 * This container's memory alone: what the webhook acknowledges a handed-off command on (handler.ts
 * wireChatAck), before any Kubernetes client loads. A request replayed to another container is handed
 * off again and refused by chatops-worker's shared check (worker.ts), so nothing runs twice.
 */
export function memoryReplayGuard(): ReplayCheck {
  const memory = new ReplayGuard();
  return { accept: async (key, nowMs, windowMs) => memory.accept(key, nowMs, windowMs) };
}
