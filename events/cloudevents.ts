/**
 * Our events as CloudEvents 1.0, the envelope Alibaba Cloud EventBridge carries (issue #35). One
 * mapping both ways, used by the Alibaba publisher and the Function Compute trigger adapter, so the
 * handlers see exactly the EventBridge-shaped event they see on AWS:
 *
 *   AWS EventBridge           CloudEvents on Alibaba EventBridge
 *   id                        id
 *   source                    source
 *   detail-type               type
 *   time                      time
 *   detail                    data (datacontenttype application/json)
 *   resources[0]              subject
 *   account, region           aliyunaccountid, aliyunregionid (stamped by Alibaba on delivery)
 *
 * PutEvents' required attributes are id, source, type, specversion (1.0), time and
 * aliyuneventbusname; `datacontenttype` is application/json only
 * (https://help.aliyun.com/document_detail/164006.htm, "PutEvents").
 */
import type { EventEnvelope } from './envelope.ts';

export interface CloudEvent {
  specversion: '1.0';
  id: string;
  source: string;
  type: string;
  time: string;
  subject?: string;
  datacontenttype: 'application/json';
  data: Record<string, unknown>;
  aliyuneventbusname?: string;
  aliyunaccountid?: string;
  aliyunregionid?: string;
  [extension: string]: unknown;
}

/** Thrown for input that is not a CloudEvent our functions take; the message names what is wrong. */
export class NotACloudEventError extends Error {
  override name = 'NotACloudEventError';
}

/** One of our events, to publish on the Alibaba bus `busName`. */
export function toCloudEvent(
  e: {
    id: string;
    source: string;
    detailType: string;
    time: string;
    detail: Record<string, unknown>;
    resources?: readonly string[];
  },
  busName: string,
): CloudEvent {
  return {
    specversion: '1.0',
    id: e.id,
    source: e.source,
    type: e.detailType,
    time: e.time,
    ...(e.resources && e.resources.length > 0 ? { subject: e.resources[0] } : {}),
    datacontenttype: 'application/json',
    data: e.detail,
    aliyuneventbusname: busName,
  };
}

/**
 * A CloudEvent as Alibaba's data-plane client (`@alicloud/eventbridge`, its CloudEvent model) takes it:
 * the core attributes, the rest under `extensions`, `data` as the bytes of its JSON (`dataText`, so a
 * publisher that must resend the same bytes passes its own).
 */
export function sdkCloudEvent(ce: CloudEvent, dataText: string = JSON.stringify(ce.data)): Record<string, unknown> {
  const { data: _data, specversion, id, source, type, datacontenttype, subject, time, ...extensions } = ce;
  return {
    id,
    source,
    type,
    specversion,
    datacontenttype,
    time,
    ...(subject !== undefined ? { subject } : {}),
    extensions,
    data: Buffer.from(dataText),
  };
}

const str = (ce: Record<string, unknown>, k: string): string => {
  const v = ce[k];
  if (typeof v !== 'string' || v === '') throw new NotACloudEventError(`${k}: a CloudEvent needs a non-empty string`);
  return v;
};

/**
 * A delivered CloudEvent as the EventBridge envelope the handlers parse (lib/handler.ts). `data`
 * may arrive as an object or, where a target passes it as text, a JSON string.
 */
export function envelopeOfCloudEvent(raw: unknown): EventEnvelope {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
    throw new NotACloudEventError('a CloudEvent is a JSON object');
  const ce = raw as Record<string, unknown>;
  if (ce.specversion !== '1.0')
    throw new NotACloudEventError(`specversion: expected "1.0", got ${JSON.stringify(ce.specversion)}`);
  let data = ce.data;
  if (typeof data === 'string') {
    try {
      data = JSON.parse(data) as unknown;
    } catch {
      throw new NotACloudEventError('data: not JSON');
    }
  }
  if (data === null || typeof data !== 'object' || Array.isArray(data))
    throw new NotACloudEventError('data: our events carry a JSON object');
  const time = new Date(str(ce, 'time'));
  if (Number.isNaN(time.getTime())) throw new NotACloudEventError('time: not a timestamp');
  return {
    version: '0',
    id: str(ce, 'id'),
    'detail-type': str(ce, 'type'),
    source: str(ce, 'source'),
    account: typeof ce.aliyunaccountid === 'string' ? ce.aliyunaccountid : '',
    // EventBridge's envelope has whole seconds (RFC 3339, no fraction): the same here.
    time: time.toISOString().replace(/\.\d{3}Z$/, 'Z'),
    region: typeof ce.aliyunregionid === 'string' ? ce.aliyunregionid : '',
    resources: typeof ce.subject === 'string' ? [ce.subject] : [],
    detail: data as Record<string, unknown>,
  };
}
