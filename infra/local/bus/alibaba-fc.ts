/**
 * What Function Compute 3.0 hands a function, and how the embedded stack's Alibaba target reports what
 * its data plane accepted (alibaba-bus.ts).
 */
import { isoSeconds, type EventEnvelope } from './envelope.ts';

/**
 * FC 3.0's context, as a handler receives it
 * (https://www.alibabacloud.com/help/en/functioncompute/fc-3-0/user-guide/context).
 */
export interface FcContext {
  requestId: string;
  function: { name: string; handler: string; memorySize: number; timeout: number };
  region: string;
  accountId: string;
  credentials: { accessKeyId: string; accessKeySecret: string; securityToken: string };
}

/** A CloudEvent as the envelope the reports read (`type` → detail-type, `data` → detail). */
export function envelopeOf(ce: Record<string, unknown>): EventEnvelope {
  return {
    version: '0',
    id: String(ce['id']),
    'detail-type': String(ce['type']),
    source: String(ce['source']),
    account: String(ce['aliyunaccountid'] ?? ''),
    time: isoSeconds(Date.parse(String(ce['time']))),
    region: String(ce['aliyunregionid'] ?? ''),
    resources: typeof ce['subject'] === 'string' ? [ce['subject']] : [],
    detail: (ce['data'] ?? {}) as Record<string, unknown>,
  };
}
