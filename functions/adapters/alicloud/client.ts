import * as openapi from '@alicloud/openapi-client';
import type { Clock } from '../clock.ts';
import { mapAliCloudError } from './error-map.ts';
import type { CloudPools, CloudTask, InstanceInfo, InstanceTypeInfo, NodePool, SystemEvent } from './ports.ts';
import { RAM_ACTIONS } from './ports.ts';
import {
  instanceFrom,
  instanceTypeFrom,
  nodePoolFrom,
  priceFrom,
  str,
  systemEventFrom,
  taskFrom,
  type Json,
} from './records.ts';
import { credentialFields, defaultClass } from './sdk.ts';
import type { AliCloudSettings } from './settings.ts';

// The adapter's parts, importable from here as before: settings, the error map, the SDK helpers.
export { mapAliCloudError, type AliCloudErrorFields } from './error-map.ts';
export { credentialFields, defaultClass, defaultCredential } from './sdk.ts';
export { aliCloudSettingsFromEnv, type AliCloudSettings } from './settings.ts';

type Ctor = new (config: openapi.Config) => {
  callApi(params: openapi.Params, request: openapi.OpenApiRequest, runtime: object): Promise<{ body: unknown }>;
};

/** The system-event states that are not over (DescribeInstanceHistoryEvents `InstanceEventCycleStatus`). */
const ACTIVE_EVENT_STATES = ['Scheduled', 'Executing', 'Inquiring'];

/** DescribeInstanceTypes' limit on `InstanceTypes` per call. */
const MAX_TYPES_PER_CALL = 10;

/**
 * The Alibaba Cloud adapter: ACK (CS 2015-12-15, ROA) and ECS (2014-05-26, RPC) through the
 * generic `@alicloud/openapi-client` (`callApi`, ACS3-HMAC-SHA256), so one small dependency serves
 * both products. Throttling, 5xx and network failures are retried with exponential backoff on the
 * injected clock; every other error is thrown with Alibaba's code and message and the RAM action.
 */
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
    return pools.map(nodePoolFrom);
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
    return taskFrom(taskId, body);
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
      for (const t of list) out.push(instanceTypeFrom(t));
      token = str(body['NextToken']);
      if (!token) return out;
    }
  }

  async hourlyPrice(instanceType: string): Promise<number | undefined> {
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
    return priceFrom(price['TradePrice']);
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
    return newest ? priceFrom(newest['SpotPrice']) : undefined;
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
      for (const x of list) out.push(instanceFrom(x));
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
        for (const e of list) out.push(systemEventFrom(e));
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
