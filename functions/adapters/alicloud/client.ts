import * as credentials from '@alicloud/credentials';
import * as openapi from '@alicloud/openapi-client';
import type { Clock } from '../clock.ts';
import {
  AdapterError,
  BadInputError,
  ConfigurationError,
  ConflictError,
  ForbiddenError,
  NotFoundError,
  ThrottledError,
  TransientError,
} from '../errors.ts';
import type { CloudPools, CloudTask, InstanceInfo, InstanceTypeInfo, NodePool, SystemEvent } from './ports.ts';
import { RAM_ACTIONS } from './ports.ts';

/**
 * The Alibaba Cloud adapter: ACK (CS 2015-12-15, ROA) and ECS (2014-05-26, RPC) through the
 * generic `@alicloud/openapi-client` (`callApi`, ACS3-HMAC-SHA256), so one small dependency serves
 * both products. Throttling, 5xx and network failures are retried with exponential backoff on the
 * injected clock; every other error is thrown with Alibaba's code and message and the RAM action.
 */
export interface AliCloudSettings {
  regionId: string;
  clusterId: string;
  /** Access keys (optionally STS); absent: the default credential chain (RRSA's OIDC env vars, ECS RAM role…). */
  accessKeyId?: string;
  accessKeySecret?: string;
  securityToken?: string;
  /**
   * One endpoint for both products (the local simulator): `127.0.0.1:8443`. Default: `cs.<region>.aliyuncs.com`,
   * `ecs.<region>.aliyuncs.com`.
   */
  endpoint?: string;
  /** `https` (default) or `http` (loopback simulator only). */
  protocol?: 'http' | 'https';
  /** Calls per operation including the first (default 5). */
  maxAttempts?: number;
  /** First backoff in ms, doubled each retry, at most 8 s (default 250). */
  backoffMs?: number;
  readTimeoutMs?: number;
}

/** Reads settings from the environment the functions run in; a missing value is named. */
export function aliCloudSettingsFromEnv(env: NodeJS.ProcessEnv = process.env): AliCloudSettings {
  const need = (name: string): string => {
    const v = env[name];
    if (!v) throw new ConfigurationError(`${name} is not set (needed to reach Alibaba Cloud)`, { what: name });
    return v;
  };
  const protocol = env['ALIBABA_CLOUD_PROTOCOL'];
  if (protocol !== undefined && protocol !== 'http' && protocol !== 'https')
    throw new ConfigurationError(`ALIBABA_CLOUD_PROTOCOL must be http or https (got ${protocol})`, {
      what: 'ALIBABA_CLOUD_PROTOCOL',
    });
  return {
    regionId: need('ALIBABA_CLOUD_REGION_ID'),
    clusterId: need('ACK_CLUSTER_ID'),
    ...(env['ALIBABA_CLOUD_ACCESS_KEY_ID']
      ? { accessKeyId: env['ALIBABA_CLOUD_ACCESS_KEY_ID'], accessKeySecret: need('ALIBABA_CLOUD_ACCESS_KEY_SECRET') }
      : {}),
    ...(env['ALIBABA_CLOUD_SECURITY_TOKEN'] ? { securityToken: env['ALIBABA_CLOUD_SECURITY_TOKEN'] } : {}),
    ...(env['ALIBABA_CLOUD_ENDPOINT'] ? { endpoint: env['ALIBABA_CLOUD_ENDPOINT'] } : {}),
    ...(protocol ? { protocol } : {}),
  };
}

/** An error from Alibaba Cloud, with its code and the RAM action of the call (for permission errors). */
export interface AliCloudErrorFields {
  code: string;
  action: string;
  requestId?: string;
}

type Json = Record<string, unknown>;

interface SdkError {
  code?: unknown;
  statusCode?: unknown;
  message?: unknown;
  data?: { Message?: unknown; message?: unknown; RequestId?: unknown; requestId?: unknown; statusCode?: unknown };
}

const isThrottle = (code: string) =>
  code.startsWith('Throttling') || code === 'ServiceUnavailable' || code === 'Throttled';
const NETWORK = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ETIMEDOUT',
  'EPIPE',
  'EAI_AGAIN',
  'ReadTimeout',
  'ConnectTimeout',
]);

/** Maps an SDK error to the adapter hierarchy; the message carries Alibaba's code and text. */
export function mapAliCloudError(err: unknown, action: string): AdapterError {
  if (err instanceof AdapterError) return err;
  const e = (err ?? {}) as SdkError;
  const code = typeof e.code === 'string' ? e.code : '';
  const status =
    typeof e.data?.statusCode === 'number'
      ? e.data.statusCode
      : typeof e.statusCode === 'number'
        ? e.statusCode
        : undefined;
  const text = String(e.data?.Message ?? e.data?.message ?? e.message ?? err);
  const requestId = String(e.data?.RequestId ?? e.data?.requestId ?? '');
  const message = `${action}: ${code || 'error'}: ${text}${requestId ? ` (request ${requestId})` : ''}`;
  const fields = { what: action, cause: err, ...(status !== undefined ? { status } : {}) };
  if (status === undefined && (NETWORK.has(code) || /socket hang up|ECONNRESET|ECONNREFUSED|timeout/i.test(text)))
    return new TransientError(message, fields);
  if (isThrottle(code) || status === 429) return new ThrottledError(message, fields);
  if (status !== undefined && status >= 500) return new TransientError(message, fields);
  // 409, or a code naming a conflict (another operation holds the node pool): retried after a
  // backoff like throttling. Alibaba publishes no list of ACK node-pool codes (its API error
  // center), so the status and the code's words decide. A retried ModifyClusterNodePool is safe:
  // desired_size is absolute, so a scale-out sent twice buys once.
  if (status === 409 || /Conflict/i.test(code)) return new ConflictError(message, fields);
  if (
    code.startsWith('InvalidAccessKeyId') ||
    code === 'SignatureDoesNotMatch' ||
    code === 'MissingAccessKeyId' ||
    code === 'InvalidSecurityToken.Expired' ||
    code.startsWith('InvalidSecurityToken')
  ) {
    return new ConfigurationError(`${message} — check the AccessKey or role gpu-reflex runs with`, fields);
  }
  if (
    code === 'Forbidden.RAM' ||
    code.startsWith('Forbidden') ||
    code === 'NoPermission' ||
    code === 'IncorrectInstanceStatus' ||
    status === 403
  )
    return new ForbiddenError(
      code.startsWith('Forbidden') || code === 'NoPermission'
        ? `${message} — the RAM policy must allow ${action}`
        : message,
      fields,
    );
  if (status === 404 || code.endsWith('NotFound')) return new NotFoundError(message, fields);
  return new BadInputError(message, fields);
}

type Ctor = new (config: openapi.Config) => {
  callApi(params: openapi.Params, request: openapi.OpenApiRequest, runtime: object): Promise<{ body: unknown }>;
};

/** A CJS module's class whichever way it was imported (node's ESM interop or a bundler). */
export function defaultClass<T>(mod: unknown): T {
  const m = mod as { default: T | { default: T } };
  return (typeof m.default === 'function' ? m.default : (m.default as { default: T }).default) as T;
}

/** Alibaba's default credential chain: env access keys, RRSA (the OIDC variables ACK injects), the ECS RAM role… */
export function defaultCredential(): unknown {
  const Credential = defaultClass<new () => unknown>(credentials);
  return new Credential();
}

/**
 * The credential fields of an Alibaba client's Config: the access keys given (with an STS token when
 * there is one), else `credential`, else the default chain.
 */
export function credentialFields(
  keys: { accessKeyId?: string | undefined; accessKeySecret?: string | undefined; securityToken?: string | undefined },
  credential?: unknown,
): Record<string, unknown> {
  return keys.accessKeyId
    ? {
        accessKeyId: keys.accessKeyId,
        accessKeySecret: keys.accessKeySecret,
        ...(keys.securityToken ? { securityToken: keys.securityToken } : {}),
      }
    : { credential: credential ?? defaultCredential() };
}

const num = (v: unknown): number => (typeof v === 'number' ? v : Number(v ?? 0));
const str = (v: unknown): string => (v === undefined || v === null ? '' : String(v));

/** The system-event states that are not over (DescribeInstanceHistoryEvents `InstanceEventCycleStatus`). */
const ACTIVE_EVENT_STATES = ['Scheduled', 'Executing', 'Inquiring'];

/** DescribeInstanceTypes' limit on `InstanceTypes` per call. */
const MAX_TYPES_PER_CALL = 10;

export class AliCloudPools implements CloudPools {
  private readonly cs: InstanceType<Ctor>;
  private readonly ecs: InstanceType<Ctor>;
  private readonly protocol: string;

  constructor(
    private readonly settings: AliCloudSettings,
    private readonly clock: Clock,
    credential?: unknown,
  ) {
    const Client = defaultClass<Ctor>(openapi);
    this.protocol = settings.protocol ?? 'https';
    const base = {
      regionId: settings.regionId,
      protocol: this.protocol,
      readTimeout: settings.readTimeoutMs ?? 10_000,
      connectTimeout: 5_000,
      ...credentialFields(settings, credential),
    };
    this.cs = new Client(
      new openapi.Config({ ...base, endpoint: settings.endpoint ?? `cs.${settings.regionId}.aliyuncs.com` }),
    );
    this.ecs = new Client(
      new openapi.Config({ ...base, endpoint: settings.endpoint ?? `ecs.${settings.regionId}.aliyuncs.com` }),
    );
  }

  /** One call with backoff on throttling, 5xx and network errors; the rest thrown at once. */
  private async call(
    method: keyof CloudPools,
    product: 'cs' | 'ecs',
    params: { pathname: string; method: string; query?: Record<string, string>; body?: Json },
  ): Promise<Json> {
    const action = RAM_ACTIONS[method];
    const apiAction = action.split(':')[1]!;
    const attempts = this.settings.maxAttempts ?? 5;
    let delay = this.settings.backoffMs ?? 250;
    for (let attempt = 1; ; attempt++) {
      try {
        const p = new openapi.Params({
          action: apiAction,
          version: product === 'cs' ? '2015-12-15' : '2014-05-26',
          protocol: this.protocol.toUpperCase(),
          pathname: params.pathname,
          method: params.method,
          authType: 'AK',
          style: product === 'cs' ? 'ROA' : 'RPC',
          reqBodyType: 'json',
          bodyType: 'json',
        });
        const req = new openapi.OpenApiRequest({
          ...(params.query ? { query: params.query } : {}),
          ...(params.body ? { body: params.body } : {}),
        });
        const res = await (product === 'cs' ? this.cs : this.ecs).callApi(p, req, {});
        return (res.body ?? {}) as Json;
      } catch (err) {
        const mapped = mapAliCloudError(err, action);
        if (!mapped.retryable || attempt >= attempts) throw mapped;
        await this.clock.sleep(delay);
        delay = Math.min(delay * 2, 8_000);
      }
    }
  }

  private get clusterPath(): string {
    return `/clusters/${encodeURIComponent(this.settings.clusterId)}`;
  }

  async listNodePools(): Promise<NodePool[]> {
    const body = await this.call('listNodePools', 'cs', { pathname: `${this.clusterPath}/nodepools`, method: 'GET' });
    const pools = Array.isArray(body['nodepools']) ? (body['nodepools'] as Json[]) : [];
    return pools.map((p) => {
      const info = (p['nodepool_info'] ?? {}) as Json;
      const status = (p['status'] ?? {}) as Json;
      const sg = (p['scaling_group'] ?? {}) as Json;
      const as = (p['auto_scaling'] ?? {}) as Json;
      const kc = (p['kubernetes_config'] ?? {}) as Json;
      const mgmt = (p['management'] ?? {}) as Json;
      const labels = Array.isArray(kc['labels']) ? (kc['labels'] as Json[]) : [];
      const taints = Array.isArray(kc['taints']) ? (kc['taints'] as Json[]) : [];
      return {
        id: str(info['nodepool_id']),
        name: str(info['name']),
        ...(str(info['region_id']) ? { regionId: str(info['region_id']) } : {}),
        state: str(status['state']),
        desiredSize: num(sg['desired_size'] ?? status['total_nodes']),
        totalNodes: num(status['total_nodes']),
        instanceTypes: Array.isArray(sg['instance_types']) ? (sg['instance_types'] as unknown[]).map(str) : [],
        chargeType: str(sg['instance_charge_type']) || 'PostPaid',
        ackAutoScaling: { enable: as['enable'] === true, min: num(as['min_instances']), max: num(as['max_instances']) },
        ackAutoRepair: mgmt['enable'] === true && mgmt['auto_repair'] === true,
        labels: Object.fromEntries(labels.map((l) => [str(l['key']), str(l['value'])])),
        taints: taints.map((t) => ({ key: str(t['key']), value: str(t['value']), effect: str(t['effect']) })),
        ...(str(sg['spot_strategy']) ? { spotStrategy: str(sg['spot_strategy']) } : {}),
        ...(Array.isArray(sg['spot_price_limit']) && (sg['spot_price_limit'] as Json[]).length > 0
          ? {
              spotPriceLimits: Object.fromEntries(
                (sg['spot_price_limit'] as Json[]).map((l) => [str(l['instance_type']), num(l['price_limit'])]),
              ),
            }
          : {}),
      };
    });
  }

  async setDesiredSize(poolId: string, desiredSize: number): Promise<{ taskId: string }> {
    const body = await this.call('setDesiredSize', 'cs', {
      pathname: `${this.clusterPath}/nodepools/${encodeURIComponent(poolId)}`,
      method: 'PUT',
      body: { scaling_group: { desired_size: desiredSize } },
    });
    return { taskId: str(body['task_id']) };
  }

  async removeNodes(
    poolId: string,
    instanceIds: string[],
    opts: { release: boolean; drain: boolean },
  ): Promise<{ taskId: string }> {
    const query = {
      instance_ids: JSON.stringify(instanceIds),
      release_node: String(opts.release),
      drain_node: String(opts.drain),
    };
    const body = await this.call('removeNodes', 'cs', {
      pathname: `${this.clusterPath}/nodepools/${encodeURIComponent(poolId)}/nodes`,
      method: 'DELETE',
      query,
    });
    return { taskId: str(body['task_id']) };
  }

  async task(taskId: string): Promise<CloudTask> {
    const body = await this.call('task', 'cs', { pathname: `/tasks/${encodeURIComponent(taskId)}`, method: 'GET' });
    const raw = str(body['state']);
    // Older documentation spells failure `fail`.
    const state = raw === 'success' ? 'success' : raw === 'failed' || raw === 'fail' ? 'failed' : 'running';
    const error = body['error'] as Json | undefined;
    return {
      id: taskId,
      state,
      ...(error && (error['code'] || error['message'])
        ? { error: { code: str(error['code']), message: str(error['message']) } }
        : {}),
    };
  }

  /**
   * DescribeInstanceTypes takes at most 10 `InstanceTypes` a call ("You can specify up to 10
   * instance types": ECS API reference, DescribeInstanceTypesRequest in the SDKs), so the ids go in
   * batches of 10, each paged. No ids describes every type (paged).
   */
  async instanceTypes(ids: string[]): Promise<InstanceTypeInfo[]> {
    if (ids.length === 0) return this.instanceTypesPage([]);
    const out: InstanceTypeInfo[] = [];
    const unique = [...new Set(ids)];
    for (let i = 0; i < unique.length; i += MAX_TYPES_PER_CALL)
      out.push(...(await this.instanceTypesPage(unique.slice(i, i + MAX_TYPES_PER_CALL))));
    return out;
  }

  private async instanceTypesPage(ids: string[]): Promise<InstanceTypeInfo[]> {
    const out: InstanceTypeInfo[] = [];
    const query: Record<string, string> = { MaxResults: '100' };
    ids.forEach((id, i) => (query[`InstanceTypes.${i + 1}`] = id));
    for (let token = ''; ;) {
      const body = await this.call('instanceTypes', 'ecs', {
        pathname: '/',
        method: 'POST',
        query: token ? { ...query, NextToken: token } : query,
      });
      const list = ((body['InstanceTypes'] as Json | undefined)?.['InstanceType'] ?? []) as Json[];
      for (const t of list) {
        out.push({
          id: str(t['InstanceTypeId']),
          gpuAmount: num(t['GPUAmount']),
          gpuSpec: str(t['GPUSpec']),
          gpuMemoryGiB: num(t['GPUMemorySize']),
          cpu: num(t['CpuCoreCount']),
          memoryGiB: num(t['MemorySize']),
        });
      }
      token = str(body['NextToken']);
      if (!token) return out;
    }
  }

  async hourlyPrice(instanceType: string): Promise<number> {
    const body = await this.call('hourlyPrice', 'ecs', {
      pathname: '/',
      method: 'POST',
      query: {
        RegionId: this.settings.regionId,
        ResourceType: 'instance',
        InstanceType: instanceType,
        PriceUnit: 'Hour',
      },
    });
    const price = ((body['PriceInfo'] as Json | undefined)?.['Price'] ?? {}) as Json;
    return num(price['TradePrice']);
  }

  /**
   * DescribeSpotPriceHistory (ECS 2014-05-26): `RegionId`, `NetworkType` (`vpc`: ACK nodes are VPC
   * instances), `InstanceType`, `OSType` → `SpotPrices.SpotPriceType[]` of `{ZoneId, Timestamp,
   * SpotPrice, OriginPrice}`. The newest entry's `SpotPrice` is what a spot instance costs now.
   */
  async spotPrice(instanceType: string): Promise<number | undefined> {
    const body = await this.call('spotPrice', 'ecs', {
      pathname: '/',
      method: 'POST',
      query: { RegionId: this.settings.regionId, NetworkType: 'vpc', InstanceType: instanceType, OSType: 'linux' },
    });
    const list = ((body['SpotPrices'] as Json | undefined)?.['SpotPriceType'] ?? []) as Json[];
    const newest = [...list].sort((a, b) => Date.parse(str(b['Timestamp'])) - Date.parse(str(a['Timestamp'])))[0];
    return newest && Number.isFinite(num(newest['SpotPrice'])) ? num(newest['SpotPrice']) : undefined;
  }

  async instances(ids: string[]): Promise<InstanceInfo[]> {
    const out: InstanceInfo[] = [];
    // DescribeInstances takes at most 100 ids per call.
    for (let i = 0; i < ids.length; i += 100) {
      const chunk = ids.slice(i, i + 100);
      const body = await this.call('instances', 'ecs', {
        pathname: '/',
        method: 'POST',
        query: { RegionId: this.settings.regionId, InstanceIds: JSON.stringify(chunk), PageSize: '100' },
      });
      const list = ((body['Instances'] as Json | undefined)?.['Instance'] ?? []) as Json[];
      for (const x of list) {
        const locks = ((x['OperationLocks'] as Json | undefined)?.['LockReason'] ?? []) as Json[];
        out.push({
          id: str(x['InstanceId']),
          status: str(x['Status']),
          hostName: str(x['HostName']),
          instanceType: str(x['InstanceType']),
          chargeType: str(x['InstanceChargeType']),
          startTime: str(x['StartTime']),
          ...(Array.isArray(locks) && locks.length > 0 ? { locks: locks.map((l) => str(l['LockReason'])) } : {}),
        });
      }
    }
    return out;
  }

  /**
   * DescribeInstanceHistoryEvents (ECS 2014-05-26,
   * https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-describeinstancehistoryevents):
   * `RegionId`, `ResourceId.N` (1–100 instance ids), `InstanceEventCycleStatus.N` — without it only events that are
   * over (Avoided, Executed, Canceled, Failed) are listed, so the active ones are named — and `MaxResults` (10–100)
   * with `NextToken` → `InstanceSystemEventSet.InstanceSystemEventType[]` of `{EventId, InstanceId,
   * EventType:{Code,Name}, EventCycleStatus:{Code,Name}, NotBefore, ...}` (field names from the SDK's
   * DescribeInstanceHistoryEventsResponseBody, @alicloud/ecs20140526).
   */
  async systemEvents(instanceIds: string[]): Promise<SystemEvent[]> {
    const out: SystemEvent[] = [];
    const ids = [...new Set(instanceIds)];
    for (let i = 0; i < ids.length; i += 100) {
      const query: Record<string, string> = { RegionId: this.settings.regionId, MaxResults: '100' };
      ids.slice(i, i + 100).forEach((id, k) => (query[`ResourceId.${k + 1}`] = id));
      ACTIVE_EVENT_STATES.forEach((st, k) => (query[`InstanceEventCycleStatus.${k + 1}`] = st));
      for (let token = ''; ;) {
        const body = await this.call('systemEvents', 'ecs', {
          pathname: '/',
          method: 'POST',
          query: token ? { ...query, NextToken: token } : query,
        });
        const list = ((body['InstanceSystemEventSet'] as Json | undefined)?.['InstanceSystemEventType'] ??
          []) as Json[];
        for (const e of list)
          out.push({
            id: str(e['EventId']),
            instanceId: str(e['InstanceId']),
            type: str((e['EventType'] as Json | undefined)?.['Name']),
            status: str((e['EventCycleStatus'] as Json | undefined)?.['Name']),
            notBefore: str(e['NotBefore']),
          });
        token = str(body['NextToken']);
        if (!token) break;
      }
    }
    return out;
  }

  async reboot(instanceId: string): Promise<void> {
    await this.call('reboot', 'ecs', { pathname: '/', method: 'POST', query: { InstanceId: instanceId } });
  }
}
