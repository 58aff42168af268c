/**
 * Parameters and secrets on Alibaba Cloud (issue #35): CloudOps Orchestration Service (OOS)
 * parameters, what the Alibaba target uses where AWS uses SSM Parameter Store. A parameter reference
 * names its store: `oos:<name>` a common parameter (GetParameter), `oos-secret:<name>` an encrypted
 * one (GetSecretParameter, WithDecryption=true, KMS behind it). adapters/ssm.ts sends such names
 * here, so every `*_PARAMETER` the functions read (policies, chat secrets, the approval key, the
 * kubeconfig) takes either.
 *
 * OOS 2019-06-01, RPC, `oos.<region>.aliyuncs.com`, through `@alicloud/openapi-client` (ACS3) as the
 * ECS/CS adapter calls its APIs. Facts
 * (https://help.aliyun.com/zh/oos/developer-reference/api-oos-2019-06-01-getsecretparameter
 * and …-getparameter): `Name` letters, digits, `-` and `_`, at most 180 characters, not starting with
 * ALIYUN, ACS, ALIBABA, ALICLOUD or OOS; the answer's `Parameter.Value` (a secret's only with
 * WithDecryption=true); RAM `oos:GetParameter` on `acs:oos:<region>:<account>:parameter/<name>`,
 * `oos:GetSecretParameter` on `…:secretparameter/<name>`, and KMS `kms:GetSecretValue` for a secret.
 * The error code for a parameter that does not exist is not listed on those pages: a 404 or a code
 * starting `EntityNotExists` is read as "not there" (unconfirmed).
 */
import * as openapi from '@alicloud/openapi-client';
import { ConfigurationError, ForbiddenError, NotFoundError } from '../errors.ts';
import { credentialFields, defaultClass, mapAliCloudError } from './client.ts';
import { OOS_PARAMETER_PREFIX, OOS_SECRET_PREFIX } from './oos-names.ts';

const NAME = /^(?!(ALIYUN|ACS|ALIBABA|ALICLOUD|OOS))[A-Za-z0-9_-]{1,180}$/i;

export interface OosReference {
  name: string;
  secret: boolean;
}

/** `oos:name` / `oos-secret:name`, the name checked against OOS's rule (named in the error). */
export function parseOosReference(ref: string): OosReference {
  const secret = ref.startsWith(OOS_SECRET_PREFIX);
  const name = ref.slice(secret ? OOS_SECRET_PREFIX.length : OOS_PARAMETER_PREFIX.length);
  if (!NAME.test(name))
    throw new ConfigurationError(
      `${ref}: an OOS parameter name is letters, digits, - and _ (at most 180), not starting with ALIYUN, ACS, ` +
        'ALIBABA, ALICLOUD or OOS',
      { what: ref },
    );
  return { name, secret };
}

type Caller = {
  callApi(params: openapi.Params, request: openapi.OpenApiRequest, runtime: object): Promise<{ body: unknown }>;
};

/** The OOS client for the function's region; the simulator's endpoint through ALIBABA_CLOUD_OOS_ENDPOINT. */
export function oosClient(env: NodeJS.ProcessEnv = process.env, credential?: unknown): Caller {
  const region = env['ALIBABA_CLOUD_REGION_ID'] || env['FC_REGION'];
  if (!region)
    throw new ConfigurationError('ALIBABA_CLOUD_REGION_ID is not set (needed to read OOS parameters)', {
      what: 'ALIBABA_CLOUD_REGION_ID',
    });
  const Client = defaultClass<new (c: openapi.Config) => Caller>(openapi);
  const keys = credentialFields(
    {
      accessKeyId: env['ALIBABA_CLOUD_ACCESS_KEY_ID'],
      accessKeySecret: env['ALIBABA_CLOUD_ACCESS_KEY_SECRET'],
      securityToken: env['ALIBABA_CLOUD_SECURITY_TOKEN'],
    },
    credential,
  );
  return new Client(
    new openapi.Config({
      regionId: region,
      endpoint: env['ALIBABA_CLOUD_OOS_ENDPOINT'] || `oos.${region}.aliyuncs.com`,
      protocol: env['ALIBABA_CLOUD_PROTOCOL'] === 'http' ? 'http' : 'https',
      readTimeout: 10_000,
      connectTimeout: 5_000,
      ...keys,
    }),
  );
}

/**
 * The value `ref` holds; `undefined` when the parameter does not exist. `label` says what it is in
 * errors (`chat secrets`, `remediation policy`); errors never carry a value.
 */
export async function readOosParameter(
  ref: string,
  label: string,
  env: NodeJS.ProcessEnv = process.env,
  client: Caller = oosClient(env),
): Promise<string | undefined> {
  const { name, secret } = parseOosReference(ref);
  const action = secret ? 'GetSecretParameter' : 'GetParameter';
  const ram = `oos:${action}${secret ? ' (and kms:GetSecretValue)' : ''}`;
  let body: Record<string, unknown>;
  try {
    const res = await client.callApi(
      new openapi.Params({
        action,
        version: '2019-06-01',
        protocol: env['ALIBABA_CLOUD_PROTOCOL'] === 'http' ? 'HTTP' : 'HTTPS',
        pathname: '/',
        method: 'POST',
        authType: 'AK',
        style: 'RPC',
        reqBodyType: 'json',
        bodyType: 'json',
      }),
      new openapi.OpenApiRequest({ query: { Name: name, ...(secret ? { WithDecryption: 'true' } : {}) } }),
      {},
    );
    body = (res.body ?? {}) as Record<string, unknown>;
  } catch (err) {
    const code = String((err as { code?: unknown }).code ?? '');
    const mapped = mapAliCloudError(err, ram);
    if (mapped instanceof NotFoundError || code.startsWith('EntityNotExists')) return undefined;
    if (mapped instanceof ForbiddenError)
      throw new ForbiddenError(`${label} ${ref}: the function's RAM role must allow ${ram} on it`, {
        what: ref,
        cause: err,
      });
    mapped.message = `${label} ${ref}: ${mapped.message}`;
    throw mapped;
  }
  const value = (body['Parameter'] as { Value?: unknown } | undefined)?.Value;
  if (typeof value !== 'string' || value === '')
    throw new ConfigurationError(`${label} ${ref}: the parameter is empty`, { what: ref });
  return value;
}
