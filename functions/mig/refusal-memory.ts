import type { MigRebalanceDeps } from './deps.ts';

/**
 * The refusal to write the mig-parted ConfigMap is told once, not every round while it holds (one 'planned' event
 * per refusal text; a state store remembers what was told, and forgets it once a round starts or finds nothing
 * refused). Without a state store it is told every round, as before.
 */
const REFUSAL_KEY = 'mig-parted-refusal';

export async function toldBefore(deps: MigRebalanceDeps, refusal: string): Promise<boolean> {
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
