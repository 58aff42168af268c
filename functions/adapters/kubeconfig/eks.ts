/**
 * A kubeconfig for EKS from the function's own IAM role: the token `aws eks get-token` makes, an STS
 * `GetCallerIdentity` URL presigned (SigV4, query string, 60 s) with the header `x-k8s-aws-id: <cluster>`
 * signed in, base64url without padding after `k8s-aws-v1.`. EKS's authenticator calls that URL and
 * maps the ARN that answers to Kubernetes identities through an access entry (docs/deploy.md#cluster-access):
 * nothing about the cluster is stored, and no IAM permission is needed to make the token.
 * EKS takes a token for 15 minutes from its `X-Amz-Date`; `aws eks get-token` says 14, so does this.
 *
 * Byte for byte the AWS CLI's token for the same credentials, region, cluster and second
 * (eks.test.ts, against vectors recorded from awscli and, where it is installed, awscli itself).
 */
import { createHash, createHmac } from 'node:crypto';
import { ConfigurationError } from '../errors.ts';
import type { FetchedKubeconfig, KubeconfigSource } from './source.ts';

export const EKS_TOKEN_PREFIX = 'k8s-aws-v1.';
/** How long a token is used (EKS accepts it 15 minutes); the wiring renews at 80% of it. */
export const EKS_TOKEN_MINUTES = 14;

export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

export interface EksCluster {
  /** The cluster's name: what `x-k8s-aws-id` carries. */
  name: string;
  region: string;
  /** The API server, `https://…eks.amazonaws.com`. */
  endpoint: string;
  /** Its CA bundle, base64 (DescribeCluster's `certificateAuthority.data`). */
  caData: string;
}

/** SigV4's URI encoding: every byte but unreserved characters, as %XX in capitals. */
const encode = (s: string): string =>
  encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
const sha256 = (s: string): string => createHash('sha256').update(s, 'utf8').digest('hex');
const hmac = (key: Buffer | string, s: string): Buffer => createHmac('sha256', key).update(s, 'utf8').digest();

/** STS's regional endpoint host (China's partition under amazonaws.com.cn). */
export function stsHost(region: string): string {
  return `sts.${region}.amazonaws.com${region.startsWith('cn-') ? '.cn' : ''}`;
}

/** The bearer token for `cluster`, signed at `nowMs` with `credentials`. */
export function eksToken(cluster: string, region: string, credentials: AwsCredentials, nowMs: number): string {
  const amzDate = new Date(nowMs)
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');
  const day = amzDate.slice(0, 8);
  const scope = `${day}/${region}/sts/aws4_request`;
  const host = stsHost(region);
  const query: [string, string][] = [
    ['Action', 'GetCallerIdentity'],
    ['Version', '2011-06-15'],
    ['X-Amz-Algorithm', 'AWS4-HMAC-SHA256'],
    ['X-Amz-Credential', `${credentials.accessKeyId}/${scope}`],
    ['X-Amz-Date', amzDate],
    ['X-Amz-Expires', '60'],
    ['X-Amz-SignedHeaders', 'host;x-k8s-aws-id'],
    ...(credentials.sessionToken ? [['X-Amz-Security-Token', credentials.sessionToken] as [string, string]] : []),
  ];
  const pairs = query.map(([k, v]) => `${encode(k)}=${encode(v)}`);
  const canonicalQuery = [...pairs].sort().join('&');
  const canonicalRequest = [
    'GET',
    '/',
    canonicalQuery,
    `host:${host}`,
    `x-k8s-aws-id:${cluster}`,
    '',
    'host;x-k8s-aws-id',
    sha256(''),
  ].join('\n');
  const stringToSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256(canonicalRequest)].join('\n');
  const key = hmac(hmac(hmac(hmac(`AWS4${credentials.secretAccessKey}`, day), region), 'sts'), 'aws4_request');
  const signature = createHmac('sha256', key).update(stringToSign, 'utf8').digest('hex');
  // The URL keeps the order the AWS CLI writes (the security token after the signed headers).
  const url = `https://${host}/?${pairs.join('&')}&X-Amz-Signature=${signature}`;
  return EKS_TOKEN_PREFIX + Buffer.from(url, 'utf8').toString('base64url');
}

/** The Lambda runtime's credentials (its role's), as the SDKs read them first. */
export function credentialsFromEnv(env: NodeJS.ProcessEnv): AwsCredentials {
  const accessKeyId = env['AWS_ACCESS_KEY_ID'];
  const secretAccessKey = env['AWS_SECRET_ACCESS_KEY'];
  if (!accessKeyId || !secretAccessKey)
    throw new ConfigurationError(
      'EKS token: no AWS credentials in the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY): the Lambda ' +
        "runtime sets them from the function's role",
      { what: 'AWS_ACCESS_KEY_ID' },
    );
  return {
    accessKeyId,
    secretAccessKey,
    ...(env['AWS_SESSION_TOKEN'] ? { sessionToken: env['AWS_SESSION_TOKEN'] } : {}),
  };
}

/** A kubeconfig with the cluster's endpoint and CA and the token as its user. */
export function eksKubeconfig(cluster: EksCluster, token: string): string {
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    `  - name: ${JSON.stringify(cluster.name)}`,
    '    cluster:',
    `      server: ${JSON.stringify(cluster.endpoint)}`,
    `      certificate-authority-data: ${JSON.stringify(cluster.caData)}`,
    'users:',
    '  - name: gpu-reflex',
    '    user:',
    `      token: ${JSON.stringify(token)}`,
    'contexts:',
    '  - name: gpu-reflex',
    '    context:',
    `      cluster: ${JSON.stringify(cluster.name)}`,
    '      user: gpu-reflex',
    'current-context: gpu-reflex',
    '',
  ].join('\n');
}

export class EksKubeconfigSource implements KubeconfigSource {
  readonly name: string;

  constructor(
    private readonly cluster: EksCluster,
    private readonly credentials: () => AwsCredentials,
    private readonly now: () => number,
  ) {
    this.name = `eks:${cluster.name} (${cluster.region})`;
  }

  async fetch(): Promise<FetchedKubeconfig> {
    const now = this.now();
    return {
      text: eksKubeconfig(this.cluster, eksToken(this.cluster.name, this.cluster.region, this.credentials(), now)),
      expiresAt: now + EKS_TOKEN_MINUTES * 60_000,
    };
  }
}
