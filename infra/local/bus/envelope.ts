/**
 * The event EventBridge delivers to targets. PutEvents builds it from a request entry; schedules
 * build the `Scheduled Event` form. Field names and order follow what AWS delivers.
 */
export interface EventEnvelope {
  version: '0';
  id: string;
  'detail-type': string;
  source: string;
  account: string;
  /** ISO-8601 UTC without milliseconds, as AWS writes it: 2026-01-01T00:00:00Z. */
  time: string;
  region: string;
  resources: string[];
  detail: Record<string, unknown>;
}

/** AWS writes event times to the second. */
export function isoSeconds(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
}
