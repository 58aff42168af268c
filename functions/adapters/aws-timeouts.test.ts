import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventBridgePublisher } from './bus-eventbridge.ts';
import { TransientError } from './errors.ts';
import { readParameter } from './ssm.ts';

/**
 * An endpoint that accepts the connection and never answers: each adapter's default client gives up
 * after AWS_TIMEOUTS.requestTimeout, as retryable, instead of waiting for Lambda's timeout. One attempt
 * (AWS_MAX_ATTEMPTS, which the SDK reads) so the test waits one deadline, not three.
 */
const remediation = (
  JSON.parse(readFileSync(new URL('../../events/catalog/remediation.example.json', import.meta.url), 'utf8')) as {
    detail: Record<string, unknown>;
  }
).detail;
let server: Server;
const saved: Record<string, string | undefined> = {};
const env = (vars: Record<string, string>) => {
  for (const [k, v] of Object.entries(vars)) {
    saved[k] = process.env[k];
    process.env[k] = v;
  }
};

beforeAll(async () => {
  server = createServer(() => {});
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  env({
    AWS_ENDPOINT_URL_EVENTBRIDGE: url,
    AWS_ENDPOINT_URL_SSM: url,
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'test',
    AWS_SECRET_ACCESS_KEY: 'test',
    AWS_MAX_ATTEMPTS: '1',
  });
});
afterAll(() => {
  for (const [k, v] of Object.entries(saved))
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  server.closeAllConnections();
  server.close();
});

describe('AWS calls have a deadline (aws-timeouts.ts)', () => {
  it(
    'PutEvents and GetParameter against a hung endpoint fail as retryable within seconds',
    { timeout: 20_000 },
    async () => {
      const started = Date.now();
      const [bus, ssm] = await Promise.allSettled([
        new EventBridgePublisher('gpu-reflex-test').publish([
          { source: 'gpu-reflex.functions', detailType: 'Remediation', detail: remediation },
        ]),
        readParameter('/gpu-reflex/test/config/quota-config', 'quota config'),
      ]);
      expect(bus).toMatchObject({ status: 'rejected', reason: expect.any(TransientError) });
      expect(ssm).toMatchObject({ status: 'rejected', reason: expect.any(TransientError) });
      expect(Date.now() - started).toBeLessThan(15_000);
    },
  );
});
