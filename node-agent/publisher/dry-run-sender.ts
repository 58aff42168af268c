/**
 * DRY_RUN: a sender that logs each entry and answers as the bus would, sending nothing. It is a
 * drop-in for the real one, chosen at wiring time, so batching, spooling and metrics behave
 * exactly as in production (a decorator, not a flag checked all over the publisher).
 */
import type { EntryResult, PublisherLog, PutEventsSender } from './types.ts';

export function dryRunSender(log: PublisherLog): PutEventsSender {
  let n = 0;
  return async (entries) =>
    entries.map((e): EntryResult => {
      log.info('dry run: would publish', {
        source: e.Source,
        detailType: e.DetailType,
        detail: e.Detail,
        bus: e.EventBusName,
      });
      return { ok: true, eventId: `dry-run-${++n}` };
    });
}
