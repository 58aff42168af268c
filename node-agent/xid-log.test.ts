import { describe, expect, it } from 'vitest';
import { XidLog } from './xid-log.ts';

describe('XidLog', () => {
  it('answers the XIDs of one GPU since a time, and forgets what is older than it keeps', () => {
    const log = new XidLog(60_000);
    log.record('GPU-a', 79, 1_000);
    log.record('GPU-b', 48, 2_000);
    log.record('GPU-a', 94, 3_000);
    expect(log.since('GPU-a', 2_000)).toEqual([94]);
    expect(log.since('GPU-a', 0)).toEqual([79, 94]);
    log.record('GPU-a', 13, 62_000);
    expect(log.since('GPU-a', 0)).toEqual([94, 13]);
  });
});
