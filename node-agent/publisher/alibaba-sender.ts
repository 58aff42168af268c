/**
 * The Alibaba Cloud EventBridge adapter (issue #35): the publisher's PutEvents port over Alibaba's
 * data-plane client (`@alicloud/eventbridge`, `POST /openapi/putEvents`), so a GPU node on ACK sends
 * its events to a custom bus with no AWS keys. Chosen where ALIBABA_EVENTBRIDGE_ENDPOINT is set
 * (open-publisher.ts); loaded with `import()` only then.
 *
 * Each entry becomes a CloudEvent 1.0 as the functions' publisher makes it (events/cloudevents.ts'
 * mapping: type = detail-type, data = detail, subject = first resource; the id the detail's
 * `eventId`, which consumers deduplicate on). Credentials: Alibaba's default chain, which on ACK
 * reads RRSA's injected `ALIBABA_CLOUD_ROLE_ARN` / `_OIDC_PROVIDER_ARN` / `_OIDC_TOKEN_FILE`
 * (ACK's RRSA guide, https://www.alibabacloud.com/help/en/ack/ack-managed-and-ack-dedicated/user-guide/
 * use-rrsa-to-authorize-pods-to-access-different-cloud-services)
 * and re-reads the rotating token. RAM: `eventbridge:PutEvents` on the bus.
 *
 * How failures reach the retry policy (retry-policy.ts): a call that fails as a whole is thrown
 * (unavailable: retried, spooled, probed); a 400 that says the request itself is wrong is thrown as
 * a ValidationException (rejected: dead-lettered after the attempts); an entry the bus refuses
 * because the bus does not exist fails the call (a missing bus is unavailable, as on AWS), other
 * entry codes are the entry's own.
 */
import * as credentials from '@alicloud/credentials';
import * as eventbridge from '@alicloud/eventbridge';
import { randomUUID } from 'node:crypto';
import { sdkCloudEvent, toCloudEvent } from '../../events/cloudevents.ts';
import type { EntryResult, PutEntry, PutEventsSender } from './types.ts';

export interface AlibabaSenderOptions {
  /** `<account id>.eventbridge.<region>.aliyuncs.com` (no scheme). */
  endpoint: string;
  /** `https` (default) or `http` (the loopback simulator only). */
  protocol?: 'http' | 'https';
  /** Explicit keys (tests); absent: the default credential chain (RRSA on ACK). */
  accessKeyId?: string;
  accessKeySecret?: string;
  securityToken?: string;
}

interface DataPlaneClient {
  putEventsWithOptions(
    events: unknown[],
    runtime: unknown,
  ): Promise<{ entryList?: { eventId?: string; errorCode?: string; errorMessage?: string }[] }>;
}

const classOf = <T>(mod: unknown): T => {
  const m = mod as { default: T | { default: T } };
  return (typeof m.default === 'function' ? m.default : (m.default as { default: T }).default) as T;
};

/** One entry as Alibaba's client takes it (events/cloudevents.ts), its Detail's bytes unchanged. */
function cloudEvent(e: PutEntry): Record<string, unknown> {
  let detail: Record<string, unknown> = {};
  try {
    const parsed = JSON.parse(e.Detail) as unknown;
    if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed))
      detail = parsed as Record<string, unknown>;
  } catch {
    // Sent as it is: the bus judges it.
  }
  const eventId = detail['eventId'];
  const id = typeof eventId === 'string' && eventId !== '' ? eventId : randomUUID();
  const ce = toCloudEvent(
    {
      id,
      source: e.Source,
      detailType: e.DetailType,
      time: e.Time.toISOString(),
      detail,
      resources: e.Resources ?? [],
    },
    e.EventBusName,
  );
  return sdkCloudEvent(ce, e.Detail);
}

class CallError extends Error {
  constructor(
    override readonly name: string,
    message: string,
    readonly $metadata: { httpStatusCode?: number },
  ) {
    super(message);
  }
}

export function alibabaSender(options: AlibabaSenderOptions): PutEventsSender {
  if (/^https?:/.test(options.endpoint))
    throw new Error(`ALIBABA_EVENTBRIDGE_ENDPOINT is a host, without a scheme (got ${options.endpoint})`);
  const Client = classOf<new (c: unknown) => DataPlaneClient>(eventbridge);
  const keys = options.accessKeyId
    ? {
        accessKeyId: options.accessKeyId,
        accessKeySecret: options.accessKeySecret,
        ...(options.securityToken ? { securityToken: options.securityToken } : {}),
      }
    : { credential: new (classOf<new () => unknown>(credentials))() };
  const client = new Client(
    new eventbridge.Config({
      endpoint: options.endpoint,
      protocol: options.protocol ?? 'https',
      connectTimeout: 3_000,
      readTimeout: 10_000,
      ...keys,
    }),
  );
  // The client's own retries sleep on the wall clock: off; the publisher owns the retry policy.
  const runtime = { autoretry: false, maxAttempts: 1 };
  return async (entries: readonly PutEntry[]): Promise<EntryResult[]> => {
    const out = await client.putEventsWithOptions(entries.map(cloudEvent), runtime).catch((err: unknown) => {
      const e = err as { code?: unknown; message?: unknown };
      const code = typeof e.code === 'string' && e.code !== '' ? e.code : 'UnknownError';
      // The client puts the error body in `data` (`{code, message, requestId}`), not the HTTP status.
      const wrong = /^Invalid(Argument|JSON)$/.test(code);
      throw new CallError(
        wrong ? 'ValidationException' : code,
        String(e.message ?? err),
        wrong ? { httpStatusCode: 400 } : {},
      );
    });
    const slots = out.entryList ?? [];
    const missingBus = slots.find((s) => s.errorCode === 'EventBusNotExist');
    if (missingBus) throw new CallError('EventBusNotExist', missingBus.errorMessage ?? 'no such bus', {});
    return entries.map((_, i): EntryResult => {
      const slot = slots[i];
      if (slot?.eventId && !slot.errorCode) return { ok: true, eventId: slot.eventId };
      if (!slot) return { ok: false, code: 'InternalFailure', message: 'response carried no result for this entry' };
      return { ok: false, code: slot.errorCode ?? 'InternalFailure', message: slot.errorMessage ?? '' };
    });
  };
}
