/** Test helper: Parameter Store on a loopback port, for the SDK's own client. */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A stand-in for Parameter Store on a loopback port: the AWS SDK's own client (AwsJson1_1, SigV4)
 * talks to it through `AWS_ENDPOINT_URL_SSM`, as Lambda's would to SSM. It keeps every request.
 */
export async function fakeSsm(answer: (name: string) => { status: number; body: object }): Promise<{
  server: Server;
  url: string;
  requests: { headers: IncomingHttpHeaders; body: Record<string, unknown> }[];
}> {
  const requests: { headers: IncomingHttpHeaders; body: Record<string, unknown> }[] = [];
  const server = createServer((req, res) => {
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString()));
    req.on('end', () => {
      const body = JSON.parse(text) as Record<string, unknown>;
      requests.push({ headers: req.headers, body });
      const a = answer(String(body['Name']));
      res.writeHead(a.status, { 'content-type': 'application/x-amz-json-1.1' }).end(JSON.stringify(a.body));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests };
}

export const AWS_ENV = {
  AWS_REGION: 'us-east-1',
  AWS_ACCESS_KEY_ID: 'test',
  AWS_SECRET_ACCESS_KEY: 'test',
  AWS_SESSION_TOKEN: undefined,
};
