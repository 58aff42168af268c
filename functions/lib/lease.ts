/**
 * The lock every reflex takes around its work (reflex.ts: lock → facts → plan → carry out): a
 * coordination.k8s.io/v1 Lease held by the invocation, so two invocations never act on one node or pool at once.
 */
import type { Clock } from '../adapters/clock.ts';
import { BlockedError } from '../adapters/errors.ts';
import type { LeaseOps } from '../adapters/kube/ports.ts';
import type { Logger } from '../adapters/logger.ts';

export interface LeasePorts {
  leases: LeaseOps;
  clock: Clock;
  logger: Logger;
  /** Who holds the lease: the invocation's request id. */
  holder: string;
}

/**
 * Runs `work` holding the lease `name` (an exclusive section across invocations). A lease held by
 * another invocation throws BlockedError (the platform retries), unless `onBusy` says otherwise.
 */
export async function withLease<T>(
  name: string,
  durationS: number,
  ports: LeasePorts,
  work: () => Promise<T>,
  onBusy?: () => T,
): Promise<T> {
  const got = await ports.leases.tryAcquire(name, ports.holder, durationS, ports.clock);
  if (!got.acquired) {
    if (onBusy) return onBusy();
    throw new BlockedError(`${name} is held by another invocation`, { what: `lease ${name}` });
  }
  try {
    return await work();
  } finally {
    await ports.leases
      .release(name, ports.holder)
      .catch((err: unknown) => ports.logger.warn('releasing lease', { lease: name, error: err }));
  }
}
