/**
 * A temporary kubeconfig from ACK itself: CS `DescribeClusterUserKubeconfig`
 * (`GET /k8s/{ClusterId}/user_config`, ROA, 2015-12-15), asked for `TemporaryDurationMinutes`
 * (15–4320) and answered `{config, expiration}` (RFC 3339). It authenticates as the RAM identity
 * that called (an AccessKey, STS or RRSA: the default credential chain), so nothing long-lived
 * about the cluster is stored anywhere; RAM must allow `cs:DescribeClusterUserKubeconfig` on the
 * cluster (infra/alicloud/ram-policy.json), and the cluster's RBAC must bind that identity
 * (docs/deploy.md#cluster-access).
 */
import * as openapi from '@alicloud/openapi-client';
import { aliCloudSettingsWithSecret } from '../alicloud/access-key.ts';
import { defaultClass, defaultCredential, mapAliCloudError, type AliCloudSettings } from '../alicloud/client.ts';
import { ConfigurationError } from '../errors.ts';
import type { FetchedKubeconfig, KubeconfigSource } from './source.ts';

export const ACK_KUBECONFIG_ACTION = 'cs:DescribeClusterUserKubeconfig';

export interface AckKubeconfigOptions {
  /** `public`: the API server's internet endpoint; `private`: its VPC address (`PrivateIpAddress=true`). */
  endpoint: 'public' | 'private';
  /** How long the kubeconfig is good for, 15–4320. */
  minutes: number;
  /** The wiring's clock (epoch ms). */
  now: () => number;
}

type Client = {
  callApi(params: openapi.Params, request: openapi.OpenApiRequest, runtime: object): Promise<{ body: unknown }>;
};

export class AckKubeconfigSource implements KubeconfigSource {
  readonly name: string;
  private readonly client: Client;
  private readonly protocol: string;

  constructor(
    private readonly settings: AliCloudSettings,
    private readonly options: AckKubeconfigOptions,
    credential?: unknown,
  ) {
    this.name = `ack:${settings.clusterId} (${options.endpoint})`;
    this.protocol = settings.protocol ?? 'https';
    const Client = defaultClass<new (c: openapi.Config) => Client>(openapi);
    const auth = settings.accessKeyId
      ? {
          accessKeyId: settings.accessKeyId,
          accessKeySecret: settings.accessKeySecret,
          ...(settings.securityToken ? { securityToken: settings.securityToken } : {}),
        }
      : { credential: credential ?? defaultCredential() };
    this.client = new Client(
      new openapi.Config({
        regionId: settings.regionId,
        protocol: this.protocol,
        readTimeout: settings.readTimeoutMs ?? 10_000,
        connectTimeout: 5_000,
        endpoint: settings.endpoint ?? `cs.${settings.regionId}.aliyuncs.com`,
        ...auth,
      }),
    );
  }

  /**
   * The identity the cloud clients use: an AccessKey in the environment, else the one the
   * SecureString `ALIBABA_CLOUD_ACCESS_KEY_PARAMETER` names (functions on Lambda), else the
   * default credential chain (RRSA in ACK).
   */
  static async fromEnv(
    env: NodeJS.ProcessEnv,
    options: AckKubeconfigOptions,
    readSecret?: (parameter: string, label: string) => Promise<string>,
  ): Promise<AckKubeconfigSource> {
    return new AckKubeconfigSource(await aliCloudSettingsWithSecret(env, readSecret), options);
  }

  async fetch(): Promise<FetchedKubeconfig> {
    const params = new openapi.Params({
      action: 'DescribeClusterUserKubeconfig',
      version: '2015-12-15',
      protocol: this.protocol.toUpperCase(),
      pathname: `/k8s/${encodeURIComponent(this.settings.clusterId)}/user_config`,
      method: 'GET',
      authType: 'AK',
      style: 'ROA',
      reqBodyType: 'json',
      bodyType: 'json',
    });
    const query = {
      PrivateIpAddress: String(this.options.endpoint === 'private'),
      TemporaryDurationMinutes: String(this.options.minutes),
    };
    let body: Record<string, unknown>;
    try {
      body = ((await this.client.callApi(params, new openapi.OpenApiRequest({ query }), {})).body ?? {}) as Record<
        string,
        unknown
      >;
    } catch (err) {
      throw mapAliCloudError(err, ACK_KUBECONFIG_ACTION);
    }
    const text = typeof body['config'] === 'string' ? body['config'] : '';
    if (!text)
      throw new ConfigurationError(`kubeconfig ${this.name}: ACK answered without a config`, { what: this.name });
    const expiration = typeof body['expiration'] === 'string' ? Date.parse(body['expiration']) : NaN;
    // An expiry that cannot be read is taken to be the one asked for: renewed too early at worst.
    return {
      text,
      expiresAt: Number.isFinite(expiration) ? expiration : this.options.now() + this.options.minutes * 60_000,
    };
  }
}
