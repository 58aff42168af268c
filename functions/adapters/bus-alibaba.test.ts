/**
 * The Alibaba bus end to end (issue #35): our publisher (Alibaba's own data-plane client underneath)
 * → the simulated Alibaba EventBridge (infra/local/bus/alibaba-eventbridge.ts: signature, limits,
 * rules in Alibaba's pattern syntax) → a Function Compute EventBridge trigger (lib/fc-trigger.ts) →
 * the label-nodes handler, unchanged, labelling a node.
 */
import eventbridgeUtil from '@alicloud/eventbridge-util';
import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { toAlibabaPatterns } from '../../events/alibaba-pattern.ts';
import { GPU_INVENTORY, SOURCES } from '../../events/index.ts';
import {
  dataPlaneStringToSign,
  startAlibabaEventBridge,
  type AlibabaEventBridge,
  type AlibabaRule,
} from '../../infra/local/bus/alibaba-eventbridge.ts';
import { inventory, labelHandlerFor } from '../labels/testing.ts';
import { fcEventTrigger } from '../lib/fc-trigger.ts';
import { AlibabaEventBridgePublisher } from './bus-alibaba.ts';
import { busPublisher } from './bus-select.ts';
import type { PublishedEvent } from './bus.ts';
import { ConfigurationError, TransientError } from './errors.ts';

const KEY = { accessKeyId: 'LTAI5tGpuReflexTest', accessKeySecret: 'secret-of-the-test-key' };
let bus: AlibabaEventBridge | undefined;
afterEach(async () => {
  await bus?.close();
  bus = undefined;
});

const gpuInventory = (node: string, eventId?: string): PublishedEvent => ({
  source: SOURCES.agent,
  detailType: GPU_INVENTORY,
  detail: {
    ...(inventory({ node, gpus: ['NVIDIA H100 80GB HBM3'] }) as unknown as Record<string, unknown>),
    ...(eventId ? { eventId } : {}),
  },
});

const publisher = (over: Partial<ConstructorParameters<typeof AlibabaEventBridgePublisher>[0]> = {}) =>
  new AlibabaEventBridgePublisher({
    endpoint: bus!.endpoint,
    busName: 'gpu-reflex',
    protocol: 'http',
    ...KEY,
    ...over,
  });

describe('publishing to Alibaba EventBridge', () => {
  it('sends our events as CloudEvents the bus accepts, at most 16 a call', async () => {
    bus = await startAlibabaEventBridge({
      accessKeys: { [KEY.accessKeyId]: KEY.accessKeySecret },
      buses: ['gpu-reflex'],
    });
    const events = Array.from({ length: 20 }, (_, i) => gpuInventory(`gpu-${i}`));
    await publisher().publish(events);
    expect(bus.accepted).toHaveLength(20);
    expect(bus.calls).toBe(2);
    expect(bus.accepted[0]).toMatchObject({
      specversion: '1.0',
      source: SOURCES.agent,
      type: GPU_INVENTORY,
      aliyuneventbusname: 'gpu-reflex',
      data: { node: 'gpu-0' },
      aliyunregionid: 'cn-hangzhou',
    });
  });

  it("keeps the detail's eventId as the CloudEvent id (consumers deduplicate on it)", async () => {
    bus = await startAlibabaEventBridge({
      accessKeys: { [KEY.accessKeyId]: KEY.accessKeySecret },
      buses: ['gpu-reflex'],
    });
    await publisher().publish([gpuInventory('gpu-1', 'evt-0000-7777')]);
    expect(bus.accepted[0]).toMatchObject({ id: 'evt-0000-7777' });
  });

  it('names a wrong secret as configuration, an unknown bus and refused entries as transient', async () => {
    bus = await startAlibabaEventBridge({
      accessKeys: { [KEY.accessKeyId]: KEY.accessKeySecret },
      buses: ['gpu-reflex'],
    });
    await expect(publisher({ accessKeySecret: 'wrong' }).publish([gpuInventory('g')])).rejects.toThrow(
      ConfigurationError,
    );
    const noBus = publisher({ busName: 'elsewhere' }).publish([gpuInventory('g')]);
    await expect(noBus).rejects.toThrow(TransientError);
    await expect(noBus).rejects.toThrow(/1 of 1 failed \(EventBusNotExist: no bus elsewhere\)/);
    expect(bus.accepted).toHaveLength(0);
  });

  it('signs with STS credentials (the FC role, RRSA): the token travels and is checked', async () => {
    bus = await startAlibabaEventBridge({
      accessKeys: { 'STS.key': 'sts-secret' },
      securityTokens: { 'STS.key': 'token-1' },
      buses: ['gpu-reflex'],
    });
    const sts = { accessKeyId: 'STS.key', accessKeySecret: 'sts-secret' };
    await publisher({ ...sts, securityToken: 'token-1' }).publish([gpuInventory('g')]);
    await expect(publisher({ ...sts, securityToken: 'token-0' }).publish([gpuInventory('g')])).rejects.toThrow(
      /InvalidSecurityToken/,
    );
    expect(bus.accepted).toHaveLength(1);
  });

  it('refuses an endpoint given with a scheme, naming the variable', () => {
    expect(
      () =>
        new AlibabaEventBridgePublisher({ endpoint: 'https://x.eventbridge.cn-hangzhou.aliyuncs.com', busName: 'b' }),
    ).toThrow(/ALIBABA_EVENTBRIDGE_ENDPOINT is a host/);
  });
});

describe('the simulated bus checks what Alibaba checks', () => {
  const signed = (path: string, headers: Record<string, string>, secret: string) =>
    createHmac('sha1', secret)
      .update(dataPlaneStringToSign('POST', path, headers), 'utf8')
      .digest('base64');

  it("signs the string Alibaba's own util signs", () => {
    const headers = {
      date: 'Sat, 05 Dec 2026 04:00:00 GMT',
      'content-type': 'application/cloudevents-batch+json; charset=utf-8',
      'x-acs-signature-nonce': 'n1',
      'x-acs-signature-method': 'HMAC-SHA1',
      'x-acs-signature-version': '1.0',
      'x-eventbridge-version': '2015-06-06',
      host: 'x',
    };
    const util = eventbridgeUtil as unknown as { getStringToSign(r: object): string } & { default?: unknown };
    const getStringToSign = ((util.default as typeof util | undefined) ?? util).getStringToSign;
    expect(dataPlaneStringToSign('POST', '/openapi/putEvents', headers)).toBe(
      getStringToSign({ method: 'POST', pathname: '/openapi/putEvents', headers, query: {} }),
    );
  });

  it('refuses a forged signature and a replayed nonce', async () => {
    bus = await startAlibabaEventBridge({
      accessKeys: { [KEY.accessKeyId]: KEY.accessKeySecret },
      buses: ['gpu-reflex'],
    });
    const body = JSON.stringify([
      { id: '1', source: 's', type: 't', specversion: '1.0', aliyuneventbusname: 'gpu-reflex' },
    ]);
    const headers = {
      date: new Date().toUTCString(),
      'content-type': 'application/cloudevents-batch+json; charset=utf-8',
      'x-acs-signature-nonce': 'nonce-1',
      'x-acs-signature-method': 'HMAC-SHA1',
      'x-acs-signature-version': '1.0',
    };
    const send = (authorization: string) =>
      fetch(`http://${bus!.endpoint}/openapi/putEvents`, {
        method: 'POST',
        headers: { ...headers, authorization },
        body,
      });
    const forged = await send(`acs:${KEY.accessKeyId}:${signed('/openapi/putEvents', headers, 'not-the-secret')}`);
    expect(forged.status).toBe(401);
    expect(await forged.json()).toMatchObject({ code: 'SignatureDoesNotMatch' });
    const good = `acs:${KEY.accessKeyId}:${signed('/openapi/putEvents', headers, KEY.accessKeySecret)}`;
    expect((await send(good)).status).toBe(200);
    const replay = await send(good);
    expect(replay.status).toBe(400);
    expect(await replay.json()).toMatchObject({ code: 'SignatureNonceUsed' });
    expect(bus.accepted).toHaveLength(1);
  });
});

describe('one event through the Alibaba target', () => {
  it('a GPU Inventory published on Alibaba EventBridge reaches label-nodes on Function Compute and labels the node', async () => {
    const { t, handler } = await labelHandlerFor('gpu-1');
    const trigger = fcEventTrigger(handler as never);
    const outcomes: unknown[] = [];
    const awsPattern = JSON.parse(
      readFileSync(new URL('../../events/patterns/label-nodes.json', import.meta.url), 'utf8'),
    ) as unknown;
    const rules: AlibabaRule[] = toAlibabaPatterns(awsPattern).map((pattern, i) => ({
      bus: 'gpu-reflex',
      name: `label-nodes-${i}`,
      pattern,
      invoke: async (event) =>
        outcomes.push(await trigger(event, { requestId: 'r', function: { name: 'label-nodes' } })),
    }));
    bus = await startAlibabaEventBridge({
      accessKeys: { [KEY.accessKeyId]: KEY.accessKeySecret },
      buses: ['gpu-reflex'],
      rules,
    });
    await publisher().publish([gpuInventory('gpu-1')]);
    await bus.settled();
    expect(outcomes).toEqual([expect.objectContaining({ status: 'done' })]);
    expect(bus.deliveries.map((d) => d.outcome)).toEqual(['delivered']);
    expect((await t.kube.nodes.get('gpu-1')).labels).toMatchObject({
      'gpu-reflex.io/gpu.count': '1',
      accelerator: 'nvidia-h100',
    });
  });
});

describe('the wiring chooses the bus', () => {
  it('publishes to Alibaba EventBridge where ALIBABA_EVENTBRIDGE_ENDPOINT is set, with the default credential chain', async () => {
    bus = await startAlibabaEventBridge({
      accessKeys: { [KEY.accessKeyId]: KEY.accessKeySecret },
      buses: ['gpu-reflex'],
    });
    vi.stubEnv('ALIBABA_CLOUD_ACCESS_KEY_ID', KEY.accessKeyId);
    vi.stubEnv('ALIBABA_CLOUD_ACCESS_KEY_SECRET', KEY.accessKeySecret);
    try {
      const chosen = await busPublisher(
        { EVENT_BUS_NAME: 'gpu-reflex', ALIBABA_EVENTBRIDGE_ENDPOINT: bus.endpoint },
        Date.now,
        { ALIBABA_CLOUD_PROTOCOL: 'http' },
      );
      expect(chosen).toBeInstanceOf(AlibabaEventBridgePublisher);
      await chosen.publish([gpuInventory('gpu-1')]);
      expect(bus.accepted).toHaveLength(1);
    } finally {
      vi.unstubAllEnvs();
    }
    const aws = await busPublisher({ EVENT_BUS_NAME: 'gpu-reflex' }, Date.now, {});
    expect(aws.constructor.name).toBe('EventBridgePublisher');
  });
});
