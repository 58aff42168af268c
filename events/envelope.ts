/**
 * The envelope EventBridge wraps around every detail, as delivered to rules and Lambda targets.
 * (`Detail` travels as a JSON string in PutEvents; here it is already an object.)
 */
import * as z from 'zod';

export const EventEnvelopeSchema = z
  .object({
    version: z.literal('0'),
    id: z.string().min(1).max(128),
    'detail-type': z.string().min(1).max(128),
    source: z.string().min(1).max(256),
    // AWS: a 12-digit account id. Alibaba Cloud (issue #35, events/cloudevents.ts): the account's
    // 16-digit UID, as its EventBridge stamps `aliyunaccountid` on delivery.
    account: z.string().regex(/^(\d{12}|\d{16})$/, 'expected a 12-digit AWS account id or a 16-digit Alibaba UID'),
    time: z.iso.datetime({ offset: false }),
    // AWS: us-east-1; Alibaba Cloud: cn-hangzhou, ap-southeast-1, cn-shanghai-finance-1
    // (https://www.alibabacloud.com/help/en/cloud-migration-guide-for-beginners/latest/regions-and-zones).
    region: z.string().regex(/^[a-z]{2}(-[a-z]+)+(-\d)?$/, 'expected a region like us-east-1 or cn-hangzhou'),
    resources: z.array(z.string().max(2048)),
    detail: z.record(z.string(), z.unknown()),
    'replay-name': z.string().optional(),
  })
  .strict();
export type EventEnvelope<D = Record<string, unknown>> = Omit<z.infer<typeof EventEnvelopeSchema>, 'detail'> & {
  detail: D;
};

/** EventBridge's limit on one entry, counted as AWS documents it. */
export const MAX_ENTRY_BYTES = 256 * 1024;

/**
 * Size of a PutEvents entry as AWS counts it: 14 bytes for Time, plus the UTF-8 bytes of Source,
 * DetailType, Detail (as sent, JSON text) and each Resource.
 */
export function entrySize(e: {
  source: string;
  detailType: string;
  detail: string;
  resources?: readonly string[];
}): number {
  let n = 14 + Buffer.byteLength(e.source) + Buffer.byteLength(e.detailType) + Buffer.byteLength(e.detail);
  for (const r of e.resources ?? []) n += Buffer.byteLength(r);
  return n;
}
