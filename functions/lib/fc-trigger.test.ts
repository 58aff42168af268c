/**
 * The same event through both targets (issue #35): a GPU Inventory delivered by AWS EventBridge to
 * Lambda, and the same event as Alibaba EventBridge delivers it to Function Compute 3.0 (a Buffer
 * of a CloudEvent; a batch in event-streaming mode), reach the label-nodes handler as the same
 * input, and its plans are the same.
 */
import type { Context } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { toCloudEvent } from '../../events/cloudevents.ts';
import type { EventEnvelope } from '../../events/envelope.ts';
import { GPU_INVENTORY, SOURCES } from '../../events/index.ts';
import { inventory, labelHandlerFor } from '../labels/testing.ts';
import { fcEventTrigger } from './fc-trigger.ts';

const detail = inventory({ node: 'gpu-1', gpus: ['NVIDIA H100 80GB HBM3', 'NVIDIA H100 80GB HBM3'] });
const aws: EventEnvelope = {
  version: '0',
  id: '6a7e8feb-b491-4cf7-a9f1-bf3703467718',
  'detail-type': GPU_INVENTORY,
  source: SOURCES.agent,
  account: '123456789012',
  time: '2026-01-01T00:00:00Z',
  region: 'us-east-1',
  resources: [],
  detail: detail as unknown as Record<string, unknown>,
};
const cloudEvent = {
  ...toCloudEvent(
    { id: aws.id, source: aws.source, detailType: aws['detail-type'], time: aws.time, detail: aws.detail },
    'gpu-reflex-prod',
  ),
  // What Alibaba EventBridge stamps on delivery.
  aliyunaccountid: '1234567890123456',
  aliyunregionid: 'cn-hangzhou',
  aliyunpublishtime: '2026-01-01T00:00:00.120Z',
};

const labelHandler = () => labelHandlerFor('gpu-1');

describe('one handler, two clouds', () => {
  it('plans the same for the AWS envelope and the Function Compute CloudEvent', async () => {
    const onAws = await labelHandler();
    const viaAws = await onAws.handler(aws as never, { awsRequestId: 'r1', functionName: 'label-nodes' } as Context);
    const onAlibaba = await labelHandler();
    const viaFc = await fcEventTrigger(onAlibaba.handler as never)(Buffer.from(JSON.stringify(cloudEvent)), {
      requestId: 'r2',
      function: { name: 'label-nodes' },
    });
    expect(viaAws).toMatchObject({ status: 'done' });
    expect(viaFc).toEqual(viaAws);
    expect((await onAlibaba.t.kube.nodes.get('gpu-1')).labels).toEqual((await onAws.t.kube.nodes.get('gpu-1')).labels);
  });

  it('takes a batch in event-streaming mode, each event its own outcome', async () => {
    const { handler } = await labelHandler();
    const out = await fcEventTrigger(handler as never)(JSON.stringify([cloudEvent, { ...cloudEvent, id: 'x2' }]), {
      requestId: 'r3',
    });
    expect(Array.isArray(out) && out.map((o) => o.status)).toEqual(['done', 'done']);
  });

  it('drops what is not one of our CloudEvents, saying why (RawData has no detail-type)', async () => {
    const { handler } = await labelHandler();
    const raw = await fcEventTrigger(handler as never)(Buffer.from(JSON.stringify(detail)), { requestId: 'r4' });
    expect(raw).toEqual({
      status: 'dropped',
      reason: expect.stringMatching(/specversion.*set the trigger's eventSchema to CloudEvents/),
    });
    const wrongType = await fcEventTrigger(handler as never)(JSON.stringify({ ...cloudEvent, type: 'GPU Health' }), {
      requestId: 'r5',
    });
    expect(wrongType).toMatchObject({ status: 'dropped', reason: expect.stringMatching(/detail-type/) });
  });
});
