import type { PublishedEvent } from '../adapters/bus.ts';
import { isRetryable } from '../adapters/errors.ts';
import type { MigRebalanceDeps } from './deps.ts';

/**
 * The refusal to write the mig-parted ConfigMap is told once, not every round while it holds (one 'planned' event
 * per refusal text; a state store remembers what was told, and forgets it once a round starts or finds nothing
 * refused). Without a state store it is told every round, as before.
 */
const REFUSAL_KEY = 'mig-parted-refusal';

async function toldBefore(deps: MigRebalanceDeps, refusal: string): Promise<boolean> {
  if (!deps.state) return false;
  const told = (await deps.state.get(REFUSAL_KEY)) as { refusal?: string } | undefined;
  return told?.refusal === refusal;
}

export async function remember(deps: MigRebalanceDeps, refusal: string | undefined): Promise<void> {
  if (!deps.state) return;
  if (refusal === undefined && (await deps.state.get(REFUSAL_KEY)) === undefined) return;
  await deps.state.update(REFUSAL_KEY, () =>
    refusal === undefined ? undefined : { refusal, at: new Date(deps.clock.now()).toISOString() },
  );
}

/**
 * Tells a refusal on the bus (its `planned` event), unless it was told before; remembered only once published: a bus
 * that refuses for now (throttling, an outage) is no failure of the round, and the next round tells it.
 */
export async function tellRefusal(
  deps: MigRebalanceDeps,
  refusal: string,
  planned: PublishedEvent | undefined,
): Promise<void> {
  if (await toldBefore(deps, refusal)) return;
  try {
    if (planned) await deps.publisher.publish([planned]);
  } catch (err) {
    if (!isRetryable(err)) throw err;
    deps.logger.error('rebalance-mig: refusal not published; told next round', { error: err });
    return;
  }
  await remember(deps, refusal);
}
