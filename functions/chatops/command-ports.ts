import type { EventPublisher } from '../adapters/bus.ts';
import type { Notifier } from '../adapters/chat/notifier.ts';
import type { Clock } from '../adapters/clock.ts';
import type { DryRunnable } from '../adapters/kube/dry-run.ts';
import type { Logger } from '../adapters/logger.ts';

/** The ports one command runs on: the real ones, or the dry-run decorators around them. */
export interface CommandPorts {
  kube: DryRunnable;
  publisher: EventPublisher;
  notifier: Notifier;
  clock: Clock;
  logger: Logger;
  /** Lease holder: this command. */
  holder: string;
  /**
   * The ports above are the dry-run decorators (run.ts portsFor, the one place it is chosen): the
   * answers say "would", nothing else branches on it.
   */
  dryRun: boolean;
}
