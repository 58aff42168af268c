/**
 * A kubeconfig kept in AWS Systems Manager Parameter Store as a SecureString (../ssm.ts: read with
 * the function's own role, `ssm:GetParameter` on that one parameter; docs/deploy.md#cluster-access).
 */
import type { SSMClient } from '@aws-sdk/client-ssm';
import { readSecureString } from '../ssm.ts';
import type { FetchedKubeconfig, KubeconfigSource } from './source.ts';

export class SsmKubeconfigSource implements KubeconfigSource {
  readonly name: string;

  constructor(
    /** The parameter's name (`/gpu-reflex/prod/kubeconfig`) or ARN. */
    private readonly parameter: string,
    private readonly client?: Pick<SSMClient, 'send'>,
  ) {
    this.name = `ssm:${parameter}`;
  }

  async fetch(): Promise<FetchedKubeconfig> {
    return { text: await readSecureString(this.parameter, 'kubeconfig', this.client) };
  }
}
