import { createHash } from 'node:crypto';
import * as openapi from '@alicloud/openapi-client';
import { afterEach, describe, expect, it } from 'vitest';
import { startAliCloudSim, type AliCloudSim } from './index.ts';
import { authorization, canonicalQuery, type SignedRequest } from './signature.ts';

let sim: AliCloudSim | undefined;
afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

const sha = (s: string) => createHash('sha256').update(s).digest('hex');
/** The gateway's time these hand-signed requests are dated at (replay.ts refuses a date 15 min off). */
const GATEWAY_NOW = () => Date.parse('2026-01-01T00:00:00Z');
let nonce = 0;

/** Sends one hand-signed request; `tamper` changes it after signing. */
async function send(
  s: AliCloudSim,
  req: { method: string; path: string; query: string; body?: string; headers?: Record<string, string> },
  tamper: (r: { path: string; query: string; body: string; headers: Record<string, string> }) => void = () => {},
) {
  const body = req.body ?? '';
  const headers: Record<string, string> = {
    host: s.endpoint,
    'x-acs-action': 'DescribeInstances',
    'x-acs-version': '2014-05-26',
    'x-acs-date': '2026-01-01T00:00:00Z',
    // A fresh nonce each request: the gateway refuses one used before (replay.ts).
    'x-acs-signature-nonce': `n-${++nonce}`,
    'x-acs-content-sha256': sha(body),
    ...req.headers,
  };
  const signed: SignedRequest = {
    method: req.method,
    path: req.path,
    query: req.query,
    headers,
    body: Buffer.from(body),
  };
  const auth = authorization(signed, s.connection.accessKeyId, s.connection.accessKeySecret);
  const out: { path: string; query: string; body: string; headers: Record<string, string> } = {
    path: req.path,
    query: req.query,
    body,
    headers: { ...headers, authorization: auth },
  };
  tamper(out);
  const { host: _host, ...rest } = out.headers;
  const res = await fetch(`${s.url}${out.path}${out.query ? `?${out.query}` : ''}`, {
    method: req.method,
    headers: rest,
    ...(out.body ? { body: out.body } : {}),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const describeInstances = { method: 'POST', path: '/', query: 'RegionId=cn-hangzhou&PageSize=5' };

describe('ACS3-HMAC-SHA256 checking', () => {
  it('accepts a correctly signed request and refuses every change made after signing', async () => {
    sim = await startAliCloudSim({ gatewayNow: GATEWAY_NOW });
    expect((await send(sim, describeInstances)).status).toBe(200);
    const changed = [
      (r: { query: string }) => (r.query = 'RegionId=cn-beijing&PageSize=5'),
      (r: { headers: Record<string, string> }) => (r.headers['x-acs-action'] = 'RebootInstance'),
      (r: { body: string }) => (r.body = 'InstanceId=i-x'),
      (r: { path: string }) => (r.path = '/other'),
    ];
    for (const tamper of changed) {
      const res = await send(sim, describeInstances, tamper as never);
      expect(res.status).toBe(400);
      expect(res.body['Code']).toBe('SignatureDoesNotMatch');
    }
    expect(sim.cloud.calls.map((c) => c.action)).toEqual(['DescribeInstances']);
  });

  it('requires every x-acs-* header to be signed, an Authorization, and the ACS3 form', async () => {
    sim = await startAliCloudSim({ gatewayNow: GATEWAY_NOW });
    const unsigned = await send(sim, describeInstances, (r) => (r.headers['x-acs-security-token'] = 'sneaked-in'));
    expect(unsigned.body).toMatchObject({ Code: 'SignatureDoesNotMatch' });
    expect(String(unsigned.body['Message'])).toContain('unsigned: x-acs-security-token');
    const none = await send(sim, describeInstances, (r) => delete r.headers['authorization']);
    expect(none).toMatchObject({ status: 400, body: { Code: 'MissingAccessKeyId' } });
    const v2 = await send(
      sim,
      describeInstances,
      (r) => (r.headers['authorization'] = 'acs LTAI5tLocalGpuReflex:c2lnbmF0dXJl'),
    );
    expect(v2).toMatchObject({ status: 400, body: { Code: 'InvalidAuthorization' } });
  });

  it('canonicalises odd query values as the SDK signs them (spaces, reserved and non-ASCII characters)', async () => {
    sim = await startAliCloudSim({}); // the SDK signs with the machine's time, the gateway's default
    const c = sim.connection;
    const Client = (
      openapi as unknown as {
        default: new (c: object) => {
          callApi(p: object, r: object, rt: object): Promise<{ body: Record<string, unknown> }>;
        };
      }
    ).default;
    const client = new Client(
      new openapi.Config({
        accessKeyId: c.accessKeyId,
        accessKeySecret: c.accessKeySecret,
        endpoint: c.endpoint,
        protocol: 'http',
        regionId: c.regionId,
      }),
    );
    const params = new openapi.Params({
      action: 'DescribeInstances',
      version: '2014-05-26',
      protocol: 'HTTP',
      pathname: '/',
      method: 'POST',
      authType: 'AK',
      style: 'RPC',
      reqBodyType: 'json',
      bodyType: 'json',
    });
    const odd = JSON.stringify(["i-a b*(~)!'é+/=&"]);
    const res = await client.callApi(
      params,
      new openapi.OpenApiRequest({ query: { RegionId: c.regionId, InstanceIds: odd } }),
      {},
    );
    expect(res.body['TotalCount']).toBe(0);
  });

  it('sorts keys and re-encodes values the way the signer did', () => {
    expect(canonicalQuery('b=2&a=%20x&c')).toBe('a=%20x&b=2&c=');
    expect(canonicalQuery("k=*()!'~")).toBe('k=%2A%28%29%21%27~');
  });
});
