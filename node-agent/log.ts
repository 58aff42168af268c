/**
 * The agent's logger: one JSON object per line on stderr (`{"time","level","msg",...fields}`),
 * what a log collector on the node parses without configuration. stdout stays free for
 * `--dry-run` events.
 */
import type { PublisherLog } from './publisher/types.ts';

export function jsonLog(write: (line: string) => void, now: () => number = Date.now): PublisherLog {
  const line =
    (level: string) =>
    (msg: string, fields: Record<string, unknown> = {}) =>
      write(JSON.stringify({ time: new Date(now()).toISOString(), level, msg, ...fields }));
  return { info: line('info'), warn: line('warn'), error: line('error') };
}
