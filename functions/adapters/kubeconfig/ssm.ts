/**
 * A kubeconfig kept in AWS Systems Manager Parameter Store as a SecureString, read with the
 * function's own role: `ssm:GetParameter` on that one parameter (serverless.yml gives every role
 * exactly that). Decryption needs `kms:Decrypt` on the parameter's key: the AWS managed key
 * `aws/ssm` grants it to every principal of the account; a customer managed key restricts it
 * (docs/deploy.md#cluster-access).
 *
 * `AWS_ENDPOINT_URL_SSM` points the SDK elsewhere (the tests' loopback stand-in).
 */
import { GetParameterCommand, SSMClient } from '@aws-sdk/client-ssm';
import type { AdapterError} from '../errors.ts';
import { BadInputError, ConfigurationError, ForbiddenError, NotFoundError, ThrottledError, TransientError } from '../errors.ts';
import type { FetchedKubeconfig, KubeconfigSource } from './source.ts';

export const SSM_ACTION = 'ssm:GetParameter';

export class SsmKubeconfigSource implements KubeconfigSource {
  readonly name: string;
  readonly permission = SSM_ACTION;

  constructor(
    /** The parameter's name (`/gpu-reflex/prod/kubeconfig`) or ARN. */
    private readonly parameter: string,
    private readonly client: Pick<SSMClient, 'send'> = new SSMClient({}),
  ) {
    this.name = `ssm:${parameter}`;
  }

  async fetch(): Promise<FetchedKubeconfig> {
    let out;
    try {
      out = await this.client.send(new GetParameterCommand({ Name: this.parameter, WithDecryption: true }));
    } catch (err) {
      throw mapSsmError(err, this.name);
    }
    const p = out.Parameter;
    if (p?.Type !== 'SecureString') throw new ConfigurationError(`kubeconfig ${this.name}: the parameter must be a SecureString (it is ${p?.Type ?? 'empty'})`, { what: this.name });
    if (!p.Value) throw new ConfigurationError(`kubeconfig ${this.name}: the parameter is empty`, { what: this.name });
    return { text: p.Value };
  }
}

/** The SDK's error by its name; the message names the parameter and the permission, never a value. */
function mapSsmError(err: unknown, what: string): AdapterError {
  const name = (err as { name?: string }).name ?? '';
  const fields = { what, cause: err };
  if (name === 'ParameterNotFound' || name === 'ParameterVersionNotFound') return new NotFoundError(`kubeconfig ${what}: no such parameter`, fields);
  if (name === 'AccessDeniedException' || name === 'AccessDenied') return new ForbiddenError(`kubeconfig ${what}: denied — the function's role needs ${SSM_ACTION} on it (and kms:Decrypt on its key)`, fields);
  if (/^KMS|InvalidKeyId/.test(name)) return new ForbiddenError(`kubeconfig ${what}: cannot decrypt (${name}) — kms:Decrypt on the parameter's key`, fields);
  if (name === 'ThrottlingException' || name === 'TooManyUpdates') return new ThrottledError(`kubeconfig ${what}: throttled`, fields);
  if (name === 'InternalServerError' || (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === undefined) return new TransientError(`kubeconfig ${what}: ${name || 'unreachable'}`, fields);
  return new BadInputError(`kubeconfig ${what}: ${name}`, fields);
}
