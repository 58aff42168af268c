/**
 * The bus over Alibaba Cloud EventBridge (issue #35): our events as CloudEvents 1.0
 * (events/cloudevents.ts) sent to a custom bus with the data plane's PutEvents through Alibaba's own
 * client `@alicloud/eventbridge` (signs `acs:<AccessKeyId>:<HMAC-SHA1>`; facts in
 * infra/local/bus/alibaba-eventbridge.ts, the simulator that checks it). Loaded with `import()` by the
 * wiring only where ALIBABA_EVENTBRIDGE_ENDPOINT is set, as bus-eventbridge.ts is for AWS.
 *
 * Credentials: the access keys given, else Alibaba's default chain (`@alicloud/credentials`: env
 * keys, RRSA's OIDC variables on ACK, the FC role's STS keys in ALIBABA_CLOUD_* …) — no AWS keys.
 * RAM: `eventbridge:PutEvents` on the bus (acs:eventbridge:<region>:<account>:eventbus/<name>).
 */
import * as eventbridge from '@alicloud/eventbridge';
import { randomUUID } from 'node:crypto';
import { sdkCloudEvent, toCloudEvent } from '../../events/cloudevents.ts';
import { credentialFields, defaultClass } from './alicloud/client.ts';
import { checkPublished, type EventPublisher, type PublishedEvent } from './bus.ts';
import { ConfigurationError, ForbiddenError, TransientError } from './errors.ts';

/** PutEvents takes at most 16 events a call (https://help.aliyun.com/document_detail/164006.htm). */
export const ALIBABA_PUT_EVENTS_BATCH = 16;

export interface AlibabaBusSettings {
  /** The data-plane endpoint `<account id>.eventbridge.<region>.aliyuncs.com` (no scheme). */
  endpoint: string;
  busName: string;
  /** `https` (default) or `http` (the loopback simulator only). */
  protocol?: 'http' | 'https';
  accessKeyId?: string;
  accessKeySecret?: string;
  securityToken?: string;
  readTimeoutMs?: number;
}

interface DataPlaneClient {
  putEventsWithOptions(
    events: unknown[],
    runtime: unknown,
  ): Promise<{ failedEntryCount?: number; entryList?: { errorCode?: string; errorMessage?: string }[] }>;
}

/** One of our events as Alibaba's client takes it, its id the detail's `eventId`. */
function sdkEvent(e: PublishedEvent, busName: string, now: () => number): Record<string, unknown> {
  const id = typeof e.detail['eventId'] === 'string' ? e.detail['eventId'] : randomUUID();
  return sdkCloudEvent(toCloudEvent({ ...e, id, time: new Date(now()).toISOString() }, busName));
}

export class AlibabaEventBridgePublisher implements EventPublisher {
  private readonly client: DataPlaneClient;
  private readonly runtime: unknown;

  constructor(
    private readonly settings: AlibabaBusSettings,
    private readonly now: () => number = Date.now,
    credential?: unknown,
  ) {
    if (/^https?:/.test(settings.endpoint))
      throw new ConfigurationError(
        `ALIBABA_EVENTBRIDGE_ENDPOINT is a host, without a scheme (got ${settings.endpoint})`,
        { what: 'ALIBABA_EVENTBRIDGE_ENDPOINT' },
      );
    const Client = defaultClass<new (c: unknown) => DataPlaneClient>(eventbridge);
    this.client = new Client(
      new eventbridge.Config({
        endpoint: settings.endpoint,
        protocol: settings.protocol ?? 'https',
        readTimeout: settings.readTimeoutMs ?? 10_000,
        connectTimeout: 5_000,
        ...credentialFields(settings, credential),
      }),
    );
    // No retries inside the client (its own sleep is on the wall clock): a failed call throws
    // TransientError and the platform re-runs the idempotent handler, as on AWS.
    this.runtime = { autoretry: false, maxAttempts: 1 };
  }

  async publish(events: readonly PublishedEvent[]): Promise<void> {
    events.forEach(checkPublished);
    const what = `Alibaba EventBridge bus ${this.settings.busName}`;
    for (let i = 0; i < events.length; i += ALIBABA_PUT_EVENTS_BATCH) {
      const batch = events.slice(i, i + ALIBABA_PUT_EVENTS_BATCH);
      const out = await this.client
        .putEventsWithOptions(
          batch.map((e) => sdkEvent(e, this.settings.busName, this.now)),
          this.runtime,
        )
        .catch((err: unknown) => {
          const e = err as { code?: unknown; message?: unknown; data?: { statusCode?: unknown } };
          const code = typeof e.code === 'string' ? e.code : '';
          const text = `publishing events: ${code || 'error'}: ${String(e.message ?? err)}`;
          if (/^(InvalidAccessKeyId|SignatureDoesNotMatch|InvalidSecurityToken|MissingAuthorization)/.test(code))
            throw new ConfigurationError(`${text} — check the AccessKey or RAM role gpu-reflex runs with`, {
              what,
              cause: err,
            });
          if (/^(Forbidden|NoPermission)/.test(code))
            throw new ForbiddenError(`${text} — the RAM policy must allow eventbridge:PutEvents on the bus`, {
              what,
              cause: err,
            });
          throw new TransientError(text, { what, cause: err });
        });
      if (out.failedEntryCount) {
        const codes = (out.entryList ?? []).flatMap((x) => (x.errorCode ? [`${x.errorCode}: ${x.errorMessage}`] : []));
        throw new TransientError(
          `publishing events: ${out.failedEntryCount} of ${batch.length} failed (${[...new Set(codes)].join('; ')})`,
          { what },
        );
      }
    }
  }
}
