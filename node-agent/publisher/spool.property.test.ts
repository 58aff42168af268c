/**
 * Property tests: the spool against a plain in-memory model. Random appends (all priorities,
 * a small bound so eviction and over-bound growth happen), acks of random records, and reopens
 * (as after a crash) must always leave exactly the model's records, in order, on disk.
 */
import fc from 'fast-check';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { scanLines } from './spool-codec.ts';
import { Spool } from './spool.ts';
import { priorityRank, PRIORITIES, toRecord, type Priority, type QueuedRecord } from './types.ts';
import { testEvent } from './test-harness.ts';

type Op = { kind: 'append'; priorities: Priority[] } | { kind: 'ack'; picks: number[] } | { kind: 'reopen' };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('append' as const),
      priorities: fc.array(fc.constantFrom(...PRIORITIES), { minLength: 1, maxLength: 6 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('ack' as const), picks: fc.array(fc.nat(50), { maxLength: 4 }) }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'reopen' as const }) },
);

describe('Spool (property)', () => {
  it('always holds exactly the records the model says, in order, and never drops critical', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(opArb, { minLength: 1, maxLength: 25 }),
        fc.integer({ min: 1_500, max: 6_000 }),
        async (ops, maxBytes) => {
          const dir = await mkdtemp(join(tmpdir(), 'gpu-reflex-spool-prop-'));
          const path = join(dir, 'spool.jsonl');
          // Every spool this run opened, abandoned ones included: closed (fsync + close, no write)
          // once the run's checks are done, so no handle is left for the garbage collector.
          const opened: Spool[] = [];
          const open = async () => {
            const r = await Spool.open({ path, maxBytes });
            opened.push(r.spool);
            return r;
          };
          try {
            let spool = (await open()).spool;
            let model: QueuedRecord[] = [];
            let seq = 0;
            for (const op of ops) {
              if (op.kind === 'append') {
                const records = op.priorities.map((p) => toRecord(testEvent(seq, p), seq++));
                const outcome = await spool.append(records);
                const dropped = new Set(outcome.dropped.map((d) => d.seq));
                for (const d of outcome.dropped) expect(d.priority).not.toBe('critical');
                // Every victim is of lower priority than some record that was kept in this append.
                const keptNow = records.filter((r) => !dropped.has(r.seq));
                for (const d of outcome.dropped.filter((x) => !records.some((r) => r.seq === x.seq))) {
                  expect(keptNow.some((k) => priorityRank[k.priority] > priorityRank[d.priority])).toBe(true);
                }
                model = [...model, ...records].filter((r) => !dropped.has(r.seq));
              } else if (op.kind === 'ack') {
                const seqs = op.picks
                  .map((i) => model[i % Math.max(1, model.length)]?.seq)
                  .filter((s): s is number => s !== undefined);
                await spool.ack(seqs);
                model = model.filter((r) => !seqs.includes(r.seq));
              } else {
                // No close: as after a kill.
                spool = (await open()).spool;
              }
              expect(spool.events).toBe(model.length);
            }
            expect(await spool.readHead(1_000)).toEqual(model);
            const reopened = await open();
            expect(reopened.recovered.corruptLines + reopened.recovered.tornBytes).toBe(0);
            expect(await reopened.spool.readHead(1_000)).toEqual(model);
          } finally {
            for (const sp of opened) await sp.close().catch(() => undefined);
            await rm(dir, { recursive: true, force: true });
          }
        },
      ),
      { numRuns: 40 },
    );
  });

  it('scanLines never throws on arbitrary bytes and never reports more than it read', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 400 }), (bytes) => {
        const buf = Buffer.from(bytes);
        const scan = scanLines(buf);
        expect(scan.tornBytes).toBeLessThanOrEqual(buf.length);
        for (const l of scan.lines) expect(l.offset + l.length).toBeLessThanOrEqual(buf.length);
      }),
      { numRuns: 300 },
    );
  });
});
