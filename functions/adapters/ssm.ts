/**
 * A secret kept in AWS Systems Manager Parameter Store as a SecureString, read with the function's
 * own role: `ssm:GetParameter` on that one parameter (serverless.yml grants exactly that). Decryption
 * needs `kms:Decrypt` on the parameter's key: the AWS managed key `aws/ssm` grants it to every
 * principal of the account; a customer managed key restricts it (docs/deploy.md#cluster-access).
 * Errors name the parameter and the permission, never a value.
 *
 * `AWS_ENDPOINT_URL_SSM` points the SDK elsewhere (the tests' loopback stand-in).
 */
import { GetParameterCommand, SSMClient } from '@aws-sdk/client-ssm';
import { isOosReference, OOS_SECRET_PREFIX } from './alicloud/oos-names.ts';
import type { AdapterError } from './errors.ts';
import { withAwsTimeouts } from './aws-timeouts.ts';
import {
  BadInputError,
  ConfigurationError,
  ForbiddenError,
  NotFoundError,
  ThrottledError,
  TransientError,
} from './errors.ts';

export const SSM_ACTION = 'ssm:GetParameter';

/** The SecureString `parameter` holds; `label` says what it is in errors (`kubeconfig`, `Alibaba Cloud AccessKey`). */
export async function readSecureString(
  parameter: string,
  label: string,
  client: Pick<SSMClient, 'send'> = new SSMClient(withAwsTimeouts({})),
): Promise<string> {
  if (isOosReference(parameter)) return readOosSecret(parameter, label);
  const what = `ssm:${parameter}`;
  let out;
  try {
    out = await client.send(new GetParameterCommand({ Name: parameter, WithDecryption: true }));
  } catch (err) {
    throw mapSsmError(err, what, label);
  }
  const p = out.Parameter;
  if (p?.Type !== 'SecureString')
    throw new ConfigurationError(
      `${label} ${what}: the parameter must be a SecureString (it is ${p?.Type ?? 'empty'})`,
      { what },
    );
  if (!p.Value) throw new ConfigurationError(`${label} ${what}: the parameter is empty`, { what });
  return p.Value;
}

/**
 * A configuration document kept in Parameter Store (a String or a SecureString: a policy is not a
 * secret, but a team may keep it encrypted), read with the function's own role. A parameter that
 * does not exist is `undefined`; the caller decides what that means (lib/config-source.ts).
 */
export async function readParameter(
  parameter: string,
  label: string,
  client: Pick<SSMClient, 'send'> = new SSMClient(withAwsTimeouts({})),
): Promise<string | undefined> {
  if (isOosReference(parameter)) return (await import('./alicloud/oos.ts')).readOosParameter(parameter, label);
  const what = `ssm:${parameter}`;
  let out;
  try {
    out = await client.send(new GetParameterCommand({ Name: parameter, WithDecryption: true }));
  } catch (err) {
    const mapped = mapSsmError(err, what, label);
    if (mapped instanceof NotFoundError) return undefined;
    throw mapped;
  }
  const p = out.Parameter;
  // StringList is a comma-joined list, never a YAML or JSON document.
  if (p?.Type !== 'String' && p?.Type !== 'SecureString')
    throw new ConfigurationError(
      `${label} ${what}: the parameter must be a String or SecureString (it is ${p?.Type ?? 'empty'})`,
      { what },
    );
  if (!p.Value) throw new ConfigurationError(`${label} ${what}: the parameter is empty`, { what });
  return p.Value;
}

/**
 * The Alibaba target's store (alicloud/oos.ts): a secret must be an encrypted OOS parameter
 * (`oos-secret:<name>`) and must exist. Loaded only where such a name is given.
 */
async function readOosSecret(parameter: string, label: string): Promise<string> {
  if (!parameter.startsWith(OOS_SECRET_PREFIX))
    throw new ConfigurationError(
      `${label} ${parameter}: a secret belongs in an encrypted OOS parameter (${OOS_SECRET_PREFIX}<name>)`,
      { what: parameter },
    );
  const value = await (await import('./alicloud/oos.ts')).readOosParameter(parameter, label);
  if (value === undefined) throw new NotFoundError(`${label} ${parameter}: no such parameter`, { what: parameter });
  return value;
}

/** The SDK's error by its name. */
function mapSsmError(err: unknown, what: string, label: string): AdapterError {
  const name = (err as { name?: string }).name ?? '';
  const fields = { what, cause: err };
  if (name === 'ParameterNotFound' || name === 'ParameterVersionNotFound')
    return new NotFoundError(`${label} ${what}: no such parameter`, fields);
  if (name === 'AccessDeniedException' || name === 'AccessDenied')
    return new ForbiddenError(
      `${label} ${what}: denied — the function's role needs ${SSM_ACTION} on it (and kms:Decrypt on its key)`,
      fields,
    );
  if (/^KMS|InvalidKeyId/.test(name))
    return new ForbiddenError(
      `${label} ${what}: cannot decrypt (${name}) — kms:Decrypt on the parameter's key`,
      fields,
    );
  if (name === 'ThrottlingException' || name === 'TooManyUpdates')
    return new ThrottledError(`${label} ${what}: throttled`, fields);
  if (
    name === 'InternalServerError' ||
    (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === undefined
  )
    return new TransientError(`${label} ${what}: ${name || 'unreachable'}`, fields);
  return new BadInputError(`${label} ${what}: ${name}`, fields);
}
