/**
 * The node agent on Alibaba Cloud (issue #35): with ALIBABA_EVENTBRIDGE_ENDPOINT set, the publisher
 * sends CloudEvents to Alibaba EventBridge through Alibaba's data-plane client — checked by the
 * simulated bus (infra/local/bus/alibaba-eventbridge.ts: signature, nonce, date, limits) — keeping
 * the detail's eventId as the CloudEvent id; failures reach the retry policy with the meaning the
 * AWS path gives them.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { startAlibabaEventBridge, type AlibabaEventBridge } from '../../infra/local/bus/alibaba-eventbridge.ts';
import { loadAgentConfig } from '../config.ts';
import { alibabaSender } from './alibaba-sender.ts';
import { openPublisherFromConfig } from './open-publisher.ts';
import { classifyCallError } from './retry-policy.ts';
import type { PutEntry } from './types.ts';

const KEY = { accessKeyId: 'LTAI5tAgentTest', accessKeySecret: 'agent-secret' };
let bus: AlibabaEventBridge | undefined;
afterEach(async () => {
  vi.unstubAllEnvs();
  await bus?.close();
  bus = undefined;
});
const start = async () =>
  (bus = await startAlibabaEventBridge({
    accessKeys: { [KEY.accessKeyId]: KEY.accessKeySecret },
    buses: ['gpu-reflex'],
  }));

const entry = (eventId: string, busName = 'gpu-reflex'): PutEntry => ({
  Time: new Date('2026-12-05T04:00:00Z'),
  Source: 'gpu-reflex.node-agent',
  DetailType: 'GPU XID Error',
  Detail: JSON.stringify({ eventId, node: 'gpu-1', xid: 79 }),
  Resources: ['node/gpu-1'],
  EventBusName: busName,
});

describe("the agent's Alibaba sender", () => {
  it('sends each entry as a CloudEvent, its id the detail’s eventId, one result per entry', async () => {
    await start();
    const send = alibabaSender({ endpoint: bus!.endpoint, protocol: 'http', ...KEY });
    const out = await send([entry('evt-xid-0001'), entry('evt-xid-0002')]);
    expect(out).toEqual([
      { ok: true, eventId: 'evt-xid-0001' },
      { ok: true, eventId: 'evt-xid-0002' },
    ]);
    expect(bus!.accepted[0]).toMatchObject({
      id: 'evt-xid-0001',
      type: 'GPU XID Error',
      source: 'gpu-reflex.node-agent',
      subject: 'node/gpu-1',
      time: '2026-12-05T04:00:00.000Z',
      data: { xid: 79 },
    });
  });

  it('reads a missing bus as the bus being unavailable (retried and spooled), a refused key likewise', async () => {
    await start();
    const missing = await alibabaSender({ endpoint: bus!.endpoint, protocol: 'http', ...KEY })([
      entry('evt-xid-0003', 'nope'),
    ]).catch((e: unknown) => e);
    expect(classifyCallError(missing)).toMatchObject({ failure: 'unavailable', code: 'EventBusNotExist' });
    const forged = await alibabaSender({ endpoint: bus!.endpoint, protocol: 'http', ...KEY, accessKeySecret: 'x' })([
      entry('evt-xid-0004'),
    ]).catch((e: unknown) => e);
    expect(classifyCallError(forged)).toMatchObject({ failure: 'unavailable', code: 'SignatureDoesNotMatch' });
    expect(bus!.accepted).toHaveLength(0);
  });

  it('is what the agent opens where ALIBABA_EVENTBRIDGE_ENDPOINT is set, credentials from the default chain', async () => {
    await start();
    vi.stubEnv('ALIBABA_CLOUD_ACCESS_KEY_ID', KEY.accessKeyId);
    vi.stubEnv('ALIBABA_CLOUD_ACCESS_KEY_SECRET', KEY.accessKeySecret);
    const dir = mkdtempSync(join(tmpdir(), 'agent-alibaba-'));
    const config = loadAgentConfig({
      NODE_NAME: 'gpu-1',
      ALIBABA_EVENTBRIDGE_ENDPOINT: bus!.endpoint,
      ALIBABA_CLOUD_PROTOCOL: 'http',
      SPOOL_PATH: join(dir, 'spool.jsonl'),
      DEAD_LETTER_PATH: join(dir, 'dead.jsonl'),
    });
    expect(config.alibabaEventBridge).toEqual({ endpoint: bus!.endpoint, protocol: 'http' });
    const publisher = await openPublisherFromConfig(config);
    const example = JSON.parse(
      readFileSync(new URL('../../events/catalog/gpu-inventory.example.json', import.meta.url), 'utf8'),
    ) as { source: string; 'detail-type': string; detail: Record<string, unknown> };
    const result = publisher.publish({
      source: example.source,
      detailType: example['detail-type'],
      detail: { ...example.detail, eventId: 'evt-inv-0001' },
      time: new Date(),
      priority: 'normal',
    });
    expect(result).toMatchObject({ ok: true });
    await publisher.whenIdle();
    await publisher.close({ deadlineMs: 1_000 });
    expect(bus!.accepted.map((e) => e['id'])).toEqual(['evt-inv-0001']);
  });

  it('refuses an endpoint with a scheme, naming the variable', () => {
    expect(() =>
      loadAgentConfig({
        NODE_NAME: 'n',
        ALIBABA_EVENTBRIDGE_ENDPOINT: 'https://x.eventbridge.cn-hangzhou.aliyuncs.com',
      }),
    ).toThrow(/ALIBABA_EVENTBRIDGE_ENDPOINT: a host/);
  });
});
