import type { Verdict } from './signature.ts';

/**
 * What Alibaba Cloud's API gateway (PopGw) checks after the signature, against replay: each
 * request's `x-acs-signature-nonce` may be used once, and its `x-acs-date` must be near the gateway's
 * own time. The V3 signature doc asks for a unique random nonce per request "to prevent replay
 * attacks" and a current UTC `yyyy-MM-ddTHH:mm:ssZ` date
 * (https://www.alibabacloud.com/help/en/sdk/product-overview/v3-request-structure-and-signature); the
 * gateway's answers are `SignatureNonceUsed` ("Specified signature nonce was used already.") and
 * `InvalidTimeStamp.Expired` ("Specified time stamp or date value is expired."), both 400, with
 * `InvalidTimeStamp.Format` for a date it cannot read (PopGw error codes, as the SDKs surface them:
 * https://api.alibabacloud.com/troubleshoot). The window is 15 minutes either way, as for the RPC
 * `Timestamp`; a nonce is remembered that long, after which its date is refused anyway.
 *
 * The gateway's time is the machine's (the SDKs sign with the wall clock, also under `simulate`,
 * whose virtual clock only the cloud's timers follow); tests inject it.
 */
export const DATE_WINDOW_MS = 15 * 60_000;

export class ReplayGuard {
  /** `<AccessKey id> <nonce>` → when the gateway saw it. */
  private readonly seen = new Map<string, number>();

  constructor(private readonly now: () => number = Date.now) {}

  check(headers: Record<string, string | string[] | undefined>, accessKeyId: string): Verdict {
    const now = this.now();
    const date = one(headers['x-acs-date']);
    if (date !== undefined) {
      const at = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/.test(date) ? Date.parse(date) : Number.NaN;
      if (Number.isNaN(at))
        return refuse('InvalidTimeStamp.Format', 'Specified time stamp or date value is not well formatted.');
      if (Math.abs(now - at) > DATE_WINDOW_MS)
        return refuse('InvalidTimeStamp.Expired', 'Specified time stamp or date value is expired.');
    }
    const nonce = one(headers['x-acs-signature-nonce']);
    if (nonce !== undefined) {
      for (const [k, t] of this.seen) if (now - t > DATE_WINDOW_MS) this.seen.delete(k);
      const key = `${accessKeyId} ${nonce}`;
      if (this.seen.has(key)) return refuse('SignatureNonceUsed', 'Specified signature nonce was used already.');
      this.seen.set(key, now);
    }
    return { ok: true, accessKeyId };
  }
}

const one = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);
const refuse = (code: string, message: string): Verdict => ({ ok: false, status: 400, code, message });
