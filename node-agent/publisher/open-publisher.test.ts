import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadAgentConfig } from '../config.ts';
import { xidEvent } from '../events.ts';
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
    // The production wiring checks every event against the catalog: a schematic detail is refused.
    expect(p.publish(testEvent(1)).ok).toBe(false);
    p.publish(
      xidEvent('gpu-node-1', Date.UTC(2026, 0, 1), {
        gpu: { index: 0, uuid: 'GPU-5f2c3a1e-8d41-4b7a-9e0f-1c2d3e4f5a6b', pciBusId: '00000000:3B:00.0', name: 'A100' },
        xid: 79,
        via: 'nvml',
        pid: null,
        process: null,
        message: 'GPU has fallen off the bus',
        podUids: [],
      }),
    );
    expect(await p.close({ deadlineMs: 1_000 })).toEqual({ spooled: 0, deadlineHit: false });
    expect(await readFile(join(dir, 'dead.jsonl'), 'utf8')).toContain('InvalidDetail');
    const dry = lines.filter((l) => l.msg === 'dry run: would publish');
    expect(dry).toHaveLength(1);
    expect(dry[0]?.fields).toMatchObject({ detailType: 'GPU XID Error', bus: 'fleet-a' });
    expect(p.status().lastPublishAt).not.toBeNull();
  });
});
