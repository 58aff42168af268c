/**
 * Where a function's kubeconfig comes from when it is not a file: a secret store its own role may
 * read, fetched at the first invocation (the wiring runs there anyway) and never written into the
 * CloudFormation template (docs/deploy.md#cluster-access).
 *
 * This file holds no SDK: each source is an adapter loaded with `import()` by `kubeconfigSource`,
 * so a bundle's import evaluates none of them (test/contract/build.test.ts).
 */
import { ConfigurationError } from '../errors.ts';

export interface FetchedKubeconfig {
  /** The kubeconfig's text. Never logged. */
  text: string;
  /** When the credentials in it stop working (epoch ms); absent: they do not expire on their own. */
  expiresAt?: number;
}

/**
 * A kubeconfig from outside the function. `fetch` is a read: safe to repeat, and repeated before
 * `expiresAt` to renew a temporary one. A source the role may not read throws ForbiddenError, a
 * missing secret NotFoundError (errors.ts), naming the secret but never its value.
 */
export interface KubeconfigSource {
  /** For logs and errors: `ssm:/gpu-reflex/prod/kubeconfig`, `ack:c-123 (public)`, `eks:gpu-prod (us-east-1)`. */
  readonly name: string;
  fetch(): Promise<FetchedKubeconfig>;
}

/**
 * When to fetch again: at 80% of the time left when it was fetched, so a renewal that fails (the
 * invocation then fails and the platform retries it) still has the old credentials' last fifth to
 * succeed in. No expiry: never.
 */
export function renewAt(fetchedAt: number, expiresAt: number | undefined): number | undefined {
  if (expiresAt === undefined) return undefined;
  return fetchedAt + Math.max(0, Math.floor((expiresAt - fetchedAt) * 0.8));
}

/**
 * The settings a source is chosen by, as functions/config.ts parses them from the environment
 * (validated there: the ACK endpoint kind, the EKS endpoint and CA given with the cluster name).
 * Named here, not imported, so the adapter imports no kernel (test/contract/layers.test.ts).
 */
export interface KubeconfigSettings {
  readonly GPU_REFLEX_KUBECONFIG_PARAMETER?: string | undefined;
  readonly GPU_REFLEX_KUBECONFIG_ACK?: 'public' | 'private' | undefined;
  readonly GPU_REFLEX_KUBECONFIG_ACK_MINUTES: number;
  readonly GPU_REFLEX_KUBECONFIG_EKS?: string | undefined;
  readonly GPU_REFLEX_EKS_ENDPOINT?: string | undefined;
  readonly GPU_REFLEX_EKS_CA_DATA?: string | undefined;
}

/** The source the configuration names, or undefined (a file, the text, or in-cluster access). */
export async function kubeconfigSource(
  config: KubeconfigSettings,
  env: NodeJS.ProcessEnv,
  now: () => number,
): Promise<KubeconfigSource | undefined> {
  if (config.GPU_REFLEX_KUBECONFIG_PARAMETER) {
    const { SsmKubeconfigSource } = await import('./ssm.ts');
    return new SsmKubeconfigSource(config.GPU_REFLEX_KUBECONFIG_PARAMETER);
  }
  if (config.GPU_REFLEX_KUBECONFIG_ACK) {
    const { AckKubeconfigSource } = await import('./ack.ts');
    return AckKubeconfigSource.fromEnv(env, {
      endpoint: config.GPU_REFLEX_KUBECONFIG_ACK,
      minutes: config.GPU_REFLEX_KUBECONFIG_ACK_MINUTES,
      now,
    });
  }
  if (config.GPU_REFLEX_KUBECONFIG_EKS) {
    const { EksKubeconfigSource, credentialsFromEnv } = await import('./eks.ts');
    const region = env['AWS_REGION'] ?? env['AWS_DEFAULT_REGION'];
    if (!region)
      throw new ConfigurationError('EKS token: no AWS_REGION in the environment (the Lambda runtime sets it)', {
        what: 'AWS_REGION',
      });
    const cluster = {
      name: config.GPU_REFLEX_KUBECONFIG_EKS,
      region,
      endpoint: config.GPU_REFLEX_EKS_ENDPOINT!,
      caData: config.GPU_REFLEX_EKS_CA_DATA!.replace(/\s/g, ''),
    };
    return new EksKubeconfigSource(cluster, () => credentialsFromEnv(env), now);
  }
  return undefined;
}
