/**
 * What the router reports, for the timeline printer and tests (`bus.on('delivered', …)`).
 * `rule` is the rule or schedule name; `attempt` counts from 1.
 */
export interface DeliveryInfo {
  rule: string;
  function: string;
  event: unknown;
  attempt: number;
  /** Virtual time of the attempt, epoch ms. */
  at: number;
}

export interface DeliveryEvents {
  delivered: [DeliveryInfo & { result: unknown }];
  failed: [DeliveryInfo & { error: Error; retryAt?: number }];
  'dead-lettered': [DeadLetter];
  scheduled: [{ rule: string; function: string; event: unknown; at: number }];
}

/** One line of the dead-letter file. */
export interface DeadLetter {
  time: string;
  rule: string;
  function: string;
  /** The rule's deadLetterQueueArn; null when the rule has none (AWS would drop the event). */
  deadLetterQueueArn: string | null;
  reason: 'retries-exhausted' | 'maximum-event-age' | 'not-retryable';
  errorName: string;
  errorMessage: string;
  attempts: number;
  event: unknown;
}
