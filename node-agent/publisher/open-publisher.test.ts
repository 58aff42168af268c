import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadAgentConfig } from '../config.ts';
import { openPublisherFromConfig } from './open-publisher.ts';
import { testEvent } from './test-harness.ts';

describe('openPublisherFromConfig', () => {
  it('with DRY_RUN=true logs events instead of sending them, and still reports them published', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'gpu-reflex-publisher-'));
    const config = loadAgentConfig({
      DRY_RUN: 'true',
      SPOOL_PATH: join(dir, 'spool.jsonl'),
      DEAD_LETTER_PATH: join(dir, 'dead.jsonl'),
      EVENT_BUS_NAME: 'fleet-a',
    });
    const lines: { msg: string; fields?: Record<string, unknown> }[] = [];
    const log = {
      info: (msg: string, fields?: Record<string, unknown>) => lines.push({ msg, ...(fields ? { fields } : {}) }),
      warn() {},
      error() {},
    };
    const p = await openPublisherFromConfig(config, { log });
    p.publish(testEvent(1));
    expect(await p.close({ deadlineMs: 1_000 })).toEqual({ spooled: 0, deadlineHit: false });
    const dry = lines.filter((l) => l.msg === 'dry run: would publish');
    expect(dry).toHaveLength(1);
    expect(dry[0]?.fields).toMatchObject({ detailType: 'GPU XID Error', bus: 'fleet-a' });
    expect(p.status().lastPublishAt).not.toBeNull();
  });
});
