import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import { atLeast, below, percentile, type BenchSuite } from '../../../bench/harness.ts';
import { parseCron } from './cron.ts';
import { ManualClock, startLocalBus } from './index.ts';

/**
 * `gpu-reflex bench bus`: what the local bus costs. The agent publishes through the real SDK and
 * the simulator replays thousands of events, so both paths are measured, plus cron stepping
 * (schedules are re-armed after every firing).
 */
const HANDLER = `export async function handler(event) { return event.id; }\n`;
const YML = `service: bench
functions:
  sink:
    handler: sink.handler
    events:
      - eventBridge:
          eventBus: bench
          pattern: { source: [bench], detail-type: [Tick], detail: { n: [{ numeric: ['>=', 0] }] } }
`;

export const busSuite: BenchSuite = {
  name: 'bus',
  summary: 'local EventBridge: PutEvents through the real SDK, routing and in-process delivery, cron stepping',
  async run(progress) {
    const dir = mkdtempSync(join(tmpdir(), 'bus-bench-'));
    writeFileSync(join(dir, 'sink.mjs'), HANDLER);
    writeFileSync(join(dir, 'serverless.yml'), YML);
    const bus = await startLocalBus({ serverlessYml: join(dir, 'serverless.yml'), clock: new ManualClock() });
    try {
      const entries = Array.from({ length: 10 }, (_, n) => ({
        Source: 'bench',
        DetailType: 'Tick',
        Detail: JSON.stringify({ n, pad: 'x'.repeat(200) }),
        EventBusName: 'bench',
      }));
      const sdk = new EventBridgeClient({
        endpoint: bus.url,
        region: 'us-east-1',
        credentials: { accessKeyId: 'a', secretAccessKey: 'b' },
        maxAttempts: 1,
      });
      progress('PutEvents warm-up');
      for (let i = 0; i < 50; i++) await sdk.send(new PutEventsCommand({ Entries: entries }));
      await bus.drain();
      const calls = 500;
      const latencies: number[] = [];
      const t0 = performance.now();
      for (let i = 0; i < calls; i++) {
        const s = performance.now();
        await sdk.send(new PutEventsCommand({ Entries: entries }));
        latencies.push(performance.now() - s);
      }
      await bus.drain();
      const sdkSeconds = (performance.now() - t0) / 1000;

      progress('in-process put and delivery');
      const n = 20_000;
      let delivered = 0;
      const off = bus.on('delivered', () => delivered++);
      const t1 = performance.now();
      for (let i = 0; i < n / 10; i++) await bus.put(entries);
      await bus.drain();
      const putSeconds = (performance.now() - t1) / 1000;
      off();
      if (delivered !== n) throw new Error(`expected ${n} deliveries, saw ${delivered}`);

      progress('cron next()');
      const cron = parseCron('cron(0/5 8-17 ? * MON-FRI *)');
      const steps = 20_000;
      let t = Date.UTC(2026, 0, 1);
      const t2 = performance.now();
      for (let i = 0; i < steps; i++) t = cron.next(t) ?? t;
      const cronMicros = ((performance.now() - t2) * 1000) / steps;

      return [
        below('PutEvents (10 entries, real SDK) p50', percentile(latencies, 50), 'ms', 5),
        below('PutEvents (10 entries, real SDK) p99', percentile(latencies, 99), 'ms', 50),
        atLeast('events accepted and delivered via SDK', (calls * 10) / sdkSeconds, 'events/s', 1_000),
        atLeast('events put and delivered in process', n / putSeconds, 'events/s', 10_000),
        below('cron next() (weekday business hours)', cronMicros, 'µs', 50),
      ];
    } finally {
      await bus.close();
    }
  },
};
