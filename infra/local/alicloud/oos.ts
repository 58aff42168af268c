/**
 * Alibaba Cloud OOS parameters as a simulator (issue #35): `GetParameter` and `GetSecretParameter`
 * (OOS 2019-06-01, RPC: the action in `x-acs-action`, parameters in the query or a form body), each
 * request's ACS3-HMAC-SHA256 signature checked (signature.ts) and its nonce and date (replay.ts).
 * From OOS's API pages (https://help.aliyun.com/zh/oos/developer-reference/api-oos-2019-06-01-getsecretparameter
 * and …-getparameter): the answer is `{RequestId, Parameter: {Name, Type, Value, ParameterVersion, …}}`,
 * a secret's `Value` only with `WithDecryption=true`; `Type` is `String` (or `StringList`) for a
 * common parameter, `Secret` for an encrypted one. A parameter that does not exist answers 404
 * `EntityNotExists.Parameter` / `EntityNotExists.SecretParameter` (the simulator's words: OOS's pages
 * list no error codes). An AccessKey may be limited to some names, answering 403 `Forbidden.RAM`.
 */
import { randomUUID } from 'node:crypto';
import { listen } from '../http-kit.ts';
import { createServer, type Server } from 'node:http';
import { ReplayGuard } from './replay.ts';
import { verify } from './signature.ts';

export interface SimParameter {
  value: string;
  secret?: boolean;
  type?: 'String' | 'StringList';
}

export interface OosSimOptions {
  accessKeys: Record<string, string>;
  parameters: Record<string, SimParameter>;
  /** AccessKey id → the names it may read (default: all). */
  allowed?: Record<string, string[]>;
  now?: () => number;
}

export interface OosSim {
  /** `127.0.0.1:<port>`, for ALIBABA_CLOUD_OOS_ENDPOINT with ALIBABA_CLOUD_PROTOCOL=http. */
  endpoint: string;
  /** Every call that passed the signature check: `<action> <name>`. */
  readonly calls: string[];
  close(): Promise<void>;
}

export async function startOosSim(o: OosSimOptions): Promise<OosSim> {
  const replay = new ReplayGuard(o.now ?? Date.now);
  const calls: string[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const requestId = randomUUID();
      const send = (status: number, body: Record<string, unknown>) => {
        res.writeHead(status, { 'content-type': 'application/json;charset=utf-8', 'x-acs-request-id': requestId });
        res.end(JSON.stringify(body));
      };
      const fail = (status: number, code: string, message: string) =>
        send(status, { RequestId: requestId, HostId: req.headers.host ?? '', Code: code, Message: message });
      const body = Buffer.concat(chunks);
      const [path = '/', query = ''] = (req.url ?? '/').split('?');
      const signed = verify(
        { method: req.method ?? 'GET', path, query, headers: req.headers, body },
        (id) => o.accessKeys[id],
      );
      if (!signed.ok) return fail(signed.status, signed.code, signed.message);
      const fresh = replay.check(req.headers, signed.accessKeyId);
      if (!fresh.ok) return fail(fresh.status, fresh.code, fresh.message);
      const params = new URLSearchParams(query);
      if (String(req.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded'))
        for (const [k, v] of new URLSearchParams(body.toString('utf8'))) params.set(k, v);
      const action = String(req.headers['x-acs-action'] ?? '');
      if (
        req.headers['x-acs-version'] !== '2019-06-01' ||
        (action !== 'GetParameter' && action !== 'GetSecretParameter')
      )
        return fail(
          404,
          'InvalidAction.NotFound',
          `${action} (version ${String(req.headers['x-acs-version'])}) is not served`,
        );
      const name = params.get('Name') ?? '';
      calls.push(`${action} ${name}`);
      const secret = action === 'GetSecretParameter';
      const allowed = o.allowed?.[signed.accessKeyId];
      if (allowed && !allowed.includes(name))
        return fail(
          403,
          'Forbidden.RAM',
          `User not authorized to operate on the specified resource: oos:${action} ${name}`,
        );
      const p = o.parameters[name];
      if (!p || (p.secret ?? false) !== secret)
        return fail(
          404,
          secret ? 'EntityNotExists.SecretParameter' : 'EntityNotExists.Parameter',
          `${name} does not exist`,
        );
      const decrypt = params.get('WithDecryption') === 'true';
      send(200, {
        RequestId: requestId,
        Parameter: {
          Name: name,
          Type: secret ? 'Secret' : (p.type ?? 'String'),
          ParameterVersion: 1,
          ...(secret ? { KeyId: 'key-simulated' } : {}),
          Value: secret && !decrypt ? '' : p.value,
        },
      });
    });
  });
  const port = await listen(server);
  return {
    endpoint: `127.0.0.1:${port}`,
    calls,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((err) => (err ? reject(err) : resolve()));
      }),
  };
}
