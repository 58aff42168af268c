import { createHash } from 'node:crypto';
import * as ecsModule from '@alicloud/ecs20140526';
import { afterEach, describe, expect, it } from 'vitest';
import { startAliCloudSim, type AliCloudSim } from './index.ts';
import { authorization, type SignedRequest } from './signature.ts';

/**
 * The gateway's replay checks (replay.ts): a signature nonce used twice and an `x-acs-date` more than
 * 15 minutes from the gateway's time are refused with Alibaba's codes, by hand-signed requests and by
 * the generated ECS SDK.
 */
let sim: AliCloudSim | undefined;
afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

const T0 = Date.parse('2026-01-01T00:00:00Z');
let gatewayNow = T0;
const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

/** One DescribeInstances, correctly signed, with this date and nonce. */
async function call(s: AliCloudSim, date: string, nonce: string) {
  const sha = createHash('sha256').update('').digest('hex');
  const headers: Record<string, string> = {
    host: s.endpoint,
    'x-acs-action': 'DescribeInstances',
    'x-acs-version': '2014-05-26',
    'x-acs-date': date,
    'x-acs-signature-nonce': nonce,
    'x-acs-content-sha256': sha,
  };
  const req: SignedRequest = {
    method: 'POST',
    path: '/',
    query: 'RegionId=cn-hangzhou',
    headers,
    body: Buffer.from(''),
  };
  const { host: _host, ...rest } = headers;
  const res = await fetch(`${s.url}/?RegionId=cn-hangzhou`, {
    method: 'POST',
    headers: { ...rest, authorization: authorization(req, s.connection.accessKeyId, s.connection.accessKeySecret) },
  });
  return { status: res.status, code: ((await res.json()) as { Code?: string }).Code };
}

describe("the gateway's replay checks", () => {
  it('refuses a signature nonce used before, even on an otherwise fresh request', async () => {
    sim = await startAliCloudSim({ gatewayNow: () => gatewayNow });
    gatewayNow = T0;
    expect(await call(sim, iso(T0), 'nonce-a')).toMatchObject({ status: 200 });
    gatewayNow = T0 + 5_000;
    expect(await call(sim, iso(T0 + 5_000), 'nonce-a')).toEqual({ status: 400, code: 'SignatureNonceUsed' });
    expect(await call(sim, iso(T0 + 5_000), 'nonce-b')).toMatchObject({ status: 200 });
  });

  it.each([
    ['20 minutes old', -20 * 60_000, 400, 'InvalidTimeStamp.Expired'],
    ['20 minutes ahead', 20 * 60_000, 400, 'InvalidTimeStamp.Expired'],
    ['14 minutes old', -14 * 60_000, 200, undefined],
  ])('an x-acs-date %s: %s', async (_what, offset, status, code) => {
    sim = await startAliCloudSim({ gatewayNow: () => T0 });
    const r = await call(sim, iso(T0 + offset), `n${offset}`);
    expect(r.status).toBe(status);
    if (code) expect(r.code).toBe(code);
  });

  it('a date it cannot read is InvalidTimeStamp.Format', async () => {
    sim = await startAliCloudSim({ gatewayNow: () => T0 });
    expect(await call(sim, 'Thu, 01 Jan 2026 00:00:00 GMT', 'n-fmt')).toEqual({
      status: 400,
      code: 'InvalidTimeStamp.Format',
    });
  });

  it("the generated ECS SDK passes on the machine's time, and is refused when the gateway's clock is 20 minutes ahead", async () => {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const Client = (ecsModule as any).default.default ?? (ecsModule as any).default;
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const { DescribeInstancesRequest } = ecsModule as any;
    let skew = 0;
    sim = await startAliCloudSim({ gatewayNow: () => Date.now() + skew });
    const c = sim.connection;
    const ecs = new Client({ ...c, protocol: 'http' });
    const ask = () => ecs.describeInstances(new DescribeInstancesRequest({ regionId: c.regionId }));
    expect((await ask()).statusCode).toBe(200);
    expect((await ask()).statusCode).toBe(200); // the SDK makes a new nonce each call
    skew = 20 * 60_000;
    await expect(ask()).rejects.toMatchObject({ code: 'InvalidTimeStamp.Expired', statusCode: 400 });
  });
});
