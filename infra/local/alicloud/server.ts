import { ReplayGuard } from './replay.ts';
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { readBody } from '../http-kit.ts';
import { CloudError, type AliCloud, type SimInstance, type SimPool, type SimTask } from './cloud.ts';
import { verify } from './signature.ts';
import { describeSystemEvents } from './system-events-api.ts';

/**
 * Alibaba Cloud OpenAPI as the official SDKs speak it, both styles on one endpoint:
 * - CS / ACK 2015-12-15 (ROA): REST paths, JSON bodies, snake_case answers;
 * - ECS 2014-05-26 (RPC): the action in `x-acs-action`, parameters in the query (or a form body),
 *   PascalCase answers.
 * Every request must carry a valid ACS3-HMAC-SHA256 signature from a known AccessKey. Errors use
 * the gateway's shape (`RequestId, HostId, Code, Message, Recommend`), CS business errors the
 * lower-case one (`code, message, requestId`); the SDKs read both.
 */
const CS = '2015-12-15';
const ECS = '2014-05-26';
const MAX_BODY = 1024 * 1024;
/** DescribeInstanceTypes: at most this many `InstanceTypes` in one call (ECS API reference). */
export const MAX_DESCRIBED_TYPES = 10;

type Json = Record<string, unknown>;

interface Call {
  action: string;
  method: string;
  segs: string[];
  query: URLSearchParams;
  body: string;
  contentType: string;
}

const iso = (ms: number | undefined) => (ms === undefined ? '' : new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z'));
/** ECS writes times to the minute: `2026-01-01T00:00Z`. */
const ecsTime = (ms: number | undefined) => (ms === undefined ? '' : new Date(ms).toISOString().slice(0, 16) + 'Z');

function send(res: ServerResponse, status: number, body: Json, requestId: string): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json;charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'x-acs-request-id': requestId,
  });
  res.end(text);
}

function gatewayError(
  res: ServerResponse,
  host: string,
  requestId: string,
  status: number,
  code: string,
  message: string,
): void {
  send(
    res,
    status,
    {
      RequestId: requestId,
      HostId: host,
      Code: code,
      Message: message,
      Recommend: `https://api.aliyun.com/troubleshoot?q=${encodeURIComponent(code)}`,
    },
    requestId,
  );
}

const bool = (v: string | null | undefined, dflt: boolean): boolean =>
  v === null || v === undefined || v === '' ? dflt : v === 'true';

function intParam(v: unknown, name: string): number {
  const n = typeof v === 'number' ? v : typeof v === 'string' && /^-?\d+$/.test(v) ? Number(v) : NaN;
  if (!Number.isInteger(n))
    throw new CloudError(400, 'InvalidParameter', `${name} must be an integer (got ${JSON.stringify(v)})`);
  return n;
}

function jsonList(v: string | null, name: string): string[] {
  if (v === null || v === '') return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(v);
  } catch {
    throw new CloudError(400, 'InvalidParameter', `${name} must be a JSON array of strings, e.g. ["i-abc"] (got ${v})`);
  }
  if (!Array.isArray(parsed) || parsed.some((x) => typeof x !== 'string'))
    throw new CloudError(400, 'InvalidParameter', `${name} must be a JSON array of strings (got ${v})`);
  return parsed as string[];
}

function poolView(cloud: AliCloud, pool: SimPool): Json {
  const all = [...cloud.instances.values()].filter((i) => i.poolId === pool.spec.id);
  const count = (f: (i: SimInstance) => boolean) => all.filter(f).length;
  const busy = [...cloud.tasks.values()].filter((t) => t.poolId === pool.spec.id && t.state === 'running');
  const state = busy.some((t) => t.type === 'nodepool_remove_nodes')
    ? 'removing'
    : busy.length > 0
      ? 'scaling'
      : 'active';
  const s = pool.spec;
  return {
    nodepool_info: {
      nodepool_id: s.id,
      name: s.name,
      type: 'ess',
      is_default: false,
      region_id: cloud.regionId,
      created: iso(pool.createdMs),
      updated: iso(pool.updatedMs),
    },
    status: {
      state,
      total_nodes: count((i) => !i.removing),
      healthy_nodes: count((i) => i.status === 'Running' && !i.removing),
      serving_nodes: count((i) => i.status === 'Running' && !i.removing),
      failed_nodes: 0,
      initial_nodes: count((i) => i.status === 'Pending' || i.status === 'Starting'),
      offline_nodes: count((i) => i.status === 'Stopping' || i.status === 'Stopped'),
      removing_nodes: count((i) => i.removing),
    },
    auto_scaling: {
      enable: s.autoScaling.enable,
      min_instances: s.autoScaling.min,
      max_instances: s.autoScaling.max,
      type: 'cpu',
    },
    scaling_group: {
      desired_size: pool.desired,
      instance_types: s.instanceTypes,
      instance_charge_type: s.chargeType,
      scaling_group_id: `asg-${s.id}`,
      vswitch_ids: [`vsw-${cloud.zoneId}`],
      multi_az_policy: 'PRIORITY',
      spot_strategy: s.spotStrategy,
      spot_price_limit: Object.entries(s.spotPriceLimit).map(([t, price]) => ({
        instance_type: t,
        price_limit: price,
      })),
    },
    kubernetes_config: {
      labels: Object.entries(s.labels).map(([key, value]) => ({ key, value })),
      taints: s.taints.map((t) => ({ key: t.key, value: t.value ?? '', effect: t.effect })),
      runtime: 'containerd',
    },
    management: { enable: s.autoRepair, auto_repair: s.autoRepair },
  };
}

function taskView(cloud: AliCloud, t: SimTask): Json {
  return {
    task_id: t.id,
    cluster_id: cloud.clusterId,
    task_type: t.type,
    state: t.state,
    created: iso(t.createdMs),
    updated: iso(t.updatedMs),
    target: { id: t.poolId, type: 'nodepool' },
    stages: [],
    events: [],
    task_result: t.instanceIds.map((id) => ({
      data: id,
      status: t.state === 'success' ? 'success' : t.state === 'failed' ? 'failed' : 'running',
    })),
    ...(t.error ? { error: t.error } : {}),
  };
}

function instanceView(cloud: AliCloud, i: SimInstance): Json {
  const type = cloud.types.get(i.instanceType);
  return {
    InstanceId: i.id,
    InstanceName: i.nodeName,
    HostName: i.nodeName,
    InstanceType: i.instanceType,
    InstanceTypeFamily: type?.family ?? '',
    Status: i.status,
    RegionId: cloud.regionId,
    ZoneId: cloud.zoneId,
    CreationTime: ecsTime(i.createdMs),
    StartTime: ecsTime(i.startedMs),
    InstanceChargeType: i.chargeType,
    Cpu: type?.cpu ?? 0,
    Memory: (type?.memoryGiB ?? 0) * 1024,
    GPUAmount: type?.gpuAmount ?? 0,
    GPUSpec: type?.gpuSpec ?? '',
    VpcAttributes: { PrivateIpAddress: { IpAddress: [i.privateIp] } },
    // A spot instance's interruption notice: `LockReason` `Recycling` (system-events.ts).
    OperationLocks: { LockReason: i.locks.map((r) => ({ LockReason: r })) },
    Tags: {
      Tag: [
        { TagKey: 'ack.aliyun.com', TagValue: cloud.clusterId },
        ...(i.poolId ? [{ TagKey: 'ack.alibabacloud.com/nodepool-id', TagValue: i.poolId }] : []),
      ],
    },
  };
}

function csRoute(call: Call): { action: string; clusterId?: string; poolId?: string; taskId?: string } | undefined {
  const s = call.segs;
  const m = call.method;
  if (m === 'GET' && s.length === 3 && s[0] === 'clusters' && s[2] === 'nodepools')
    return { action: 'DescribeClusterNodePools', clusterId: s[1]! };
  if (s.length === 4 && s[0] === 'clusters' && s[2] === 'nodepools') {
    // DescribeClusterNodePoolDetail: GET /clusters/{ClusterId}/nodepools/{NodepoolId}, one pool in the shape of
    // DescribeClusterNodePools' items (https://www.alibabacloud.com/help/en/ack/ack-managed-and-ack-dedicated/
    // developer-reference/api-cs-2015-12-15-describeclusternodepooldetail).
    if (m === 'GET') return { action: 'DescribeClusterNodePoolDetail', clusterId: s[1]!, poolId: s[3]! };
    if (m === 'PUT') return { action: 'ModifyClusterNodePool', clusterId: s[1]!, poolId: s[3]! };
    if (m === 'POST') return { action: 'ScaleClusterNodePool', clusterId: s[1]!, poolId: s[3]! };
  }
  if (m === 'DELETE' && s.length === 5 && s[0] === 'clusters' && s[2] === 'nodepools' && s[4] === 'nodes')
    return { action: 'RemoveNodePoolNodes', clusterId: s[1]!, poolId: s[3]! };
  if (m === 'GET' && s.length === 2 && s[0] === 'tasks') return { action: 'DescribeTaskInfo', taskId: s[1]! };
  if (m === 'GET' && s.length === 3 && s[0] === 'k8s' && s[2] === 'user_config')
    return { action: 'DescribeClusterUserKubeconfig', clusterId: s[1]! };
  return undefined;
}

function jsonBody(call: Call): Json {
  if (call.body.trim() === '') return {};
  try {
    const v: unknown = JSON.parse(call.body);
    if (v && typeof v === 'object' && !Array.isArray(v)) return v as Json;
  } catch {
    // fall through
  }
  throw new CloudError(400, 'InvalidParameter', 'the request body must be a JSON object');
}

function serveCs(cloud: AliCloud, call: Call, requestId: string): Json {
  const r = csRoute(call);
  if (!r || r.action !== call.action)
    throw new CloudError(
      404,
      'InvalidAction.NotFound',
      `Specified api is not found, please check your url and method (${call.method} /${call.segs.join('/')} ` +
        `as ${call.action}).`,
    );
  if (r.clusterId !== undefined) cloud.cluster(r.clusterId);
  switch (r.action) {
    case 'DescribeClusterNodePools':
      return { nodepools: [...cloud.pools.values()].map((p) => poolView(cloud, p)), request_id: requestId };
    case 'DescribeClusterNodePoolDetail':
      return poolView(cloud, cloud.pool(r.poolId!));
    case 'ModifyClusterNodePool': {
      const body = jsonBody(call);
      const sg = body['scaling_group'] as Json | undefined;
      if (sg?.['desired_size'] === undefined)
        throw new CloudError(
          400,
          'InvalidParameter',
          'this simulator changes scaling_group.desired_size only; it is missing',
        );
      const task = cloud.setDesired(r.poolId!, intParam(sg['desired_size'], 'scaling_group.desired_size'));
      return { cluster_id: cloud.clusterId, nodepool_id: r.poolId, task_id: task.id, request_id: requestId };
    }
    case 'ScaleClusterNodePool': {
      const body = jsonBody(call);
      const task = cloud.scale(r.poolId!, intParam(body['count'], 'count'));
      return { cluster_id: cloud.clusterId, nodepool_id: r.poolId, task_id: task.id, request_id: requestId };
    }
    case 'RemoveNodePoolNodes': {
      const ids = jsonList(call.query.get('instance_ids'), 'instance_ids');
      if (ids.length === 0 && call.query.get('nodes'))
        throw new CloudError(
          400,
          'InvalidParameter',
          '`nodes` is deprecated and not served here: name the nodes by instance_ids',
        );
      const task = cloud.removeNodes(r.poolId!, ids, {
        release: bool(call.query.get('release_node'), false),
        drain: bool(call.query.get('drain_node'), false),
      });
      return { task_id: task.id, request_id: requestId };
    }
    case 'DescribeClusterUserKubeconfig': {
      const minutes = call.query.get('TemporaryDurationMinutes');
      const got = cloud.userKubeconfig(
        bool(call.query.get('PrivateIpAddress'), false),
        minutes === null ? undefined : intParam(minutes, 'TemporaryDurationMinutes'),
      );
      return { config: got.config, expiration: iso(got.expiresMs) };
    }
    default:
      return taskView(cloud, cloud.task(r.taskId!));
  }
}

/** RPC parameters: the query and, for a form body, its fields. */
function rpcParams(call: Call): URLSearchParams {
  const p = new URLSearchParams(call.query);
  if (call.contentType.startsWith('application/x-www-form-urlencoded'))
    for (const [k, v] of new URLSearchParams(call.body)) p.append(k, v);
  return p;
}

function listParam(p: URLSearchParams, name: string): string[] {
  const out: string[] = [];
  for (let n = 1; p.has(`${name}.${n}`); n++) out.push(p.get(`${name}.${n}`)!);
  return out;
}

function page<T>(items: T[], p: URLSearchParams, sizeName: string, max: number): { items: T[]; next: string } {
  const size = p.get(sizeName) ? intParam(p.get(sizeName), sizeName) : max;
  if (size < 1 || size > max)
    throw new CloudError(400, 'InvalidParameter', `${sizeName} must be from 1 to ${max} (got ${size})`);
  const token = p.get('NextToken');
  let start = 0;
  if (token) {
    const m = /^off-(\d+)$/.exec(Buffer.from(token, 'base64url').toString('utf8'));
    if (!m) throw new CloudError(400, 'InvalidNextToken', 'The specified NextToken is invalid.');
    start = Number(m[1]);
  }
  const slice = items.slice(start, start + size);
  return {
    items: slice,
    next: start + size < items.length ? Buffer.from(`off-${start + size}`).toString('base64url') : '',
  };
}

function required(p: URLSearchParams, name: string): string {
  const v = p.get(name);
  if (v === null || v === '') throw new CloudError(400, `Missing${name}`, `${name} is mandatory for this action.`);
  return v;
}

function serveEcs(cloud: AliCloud, call: Call, requestId: string): Json {
  const p = rpcParams(call);
  switch (call.action) {
    case 'DescribeInstanceTypes': {
      const wanted = listParam(p, 'InstanceTypes');
      // "The instance types. You can specify up to 10 instance types." (ECS DescribeInstanceTypes API
      // reference, and the SDKs' DescribeInstanceTypesRequest). The code for more is not published:
      // ECS's generic 400 for a parameter out of its range is answered.
      if (wanted.length > MAX_DESCRIBED_TYPES)
        throw new CloudError(
          400,
          'InvalidParameter',
          `The specified parameter InstanceTypes is not valid: at most ${MAX_DESCRIBED_TYPES} instance types ` +
            `(got ${wanted.length}).`,
        );
      const family = p.get('InstanceTypeFamily');
      const all = [...cloud.types.values()].filter(
        (t) => (wanted.length === 0 || wanted.includes(t.id)) && (!family || t.family === family),
      );
      const { items, next } = page(all, p, 'MaxResults', 100);
      const InstanceType = items.map((t) => ({
        InstanceTypeId: t.id,
        InstanceTypeFamily: t.family,
        CpuCoreCount: t.cpu,
        MemorySize: t.memoryGiB,
        GPUAmount: t.gpuAmount,
        GPUSpec: t.gpuSpec,
        GPUMemorySize: t.gpuMemoryGiB,
        InstanceCategory: 'GPU-accelerated',
      }));
      return { RequestId: requestId, NextToken: next, InstanceTypes: { InstanceType } };
    }
    case 'DescribePrice': {
      required(p, 'RegionId');
      const typeId = required(p, 'InstanceType');
      const resourceType = p.get('ResourceType') ?? 'instance';
      if (resourceType !== 'instance')
        throw new CloudError(
          400,
          'InvalidParameter',
          `ResourceType ${resourceType}: this simulator prices instances only`,
        );
      const type = cloud.types.get(typeId);
      if (!type)
        throw new CloudError(
          400,
          'InvalidInstanceType.NotFound',
          `The specified InstanceType does not exist: ${typeId}`,
        );
      const unit = p.get('PriceUnit') ?? 'Hour';
      const hours: Record<string, number> = { Hour: 1, Week: 168, Month: 720, Year: 8760 };
      if (hours[unit] === undefined)
        throw new CloudError(400, 'InvalidPriceUnit', `PriceUnit must be one of Hour, Week, Month, Year (got ${unit})`);
      const price = Math.round(type.pricePerHour * hours[unit] * 100) / 100;
      return {
        RequestId: requestId,
        PriceInfo: {
          Price: { OriginalPrice: price, DiscountPrice: 0, TradePrice: price, Currency: 'CNY' },
          Rules: { Rule: [] },
        },
      };
    }
    case 'DescribeSpotPriceHistory': {
      // ECS DescribeSpotPriceHistory: RegionId, NetworkType (classic | vpc) and InstanceType are
      // required; the answer lists SpotPrices.SpotPriceType[] per zone with its Timestamp.
      required(p, 'RegionId');
      const network = required(p, 'NetworkType');
      if (network !== 'vpc' && network !== 'classic')
        throw new CloudError(400, 'InvalidNetworkType.ValueNotSupported', `NetworkType ${network} is not supported`);
      const typeId = required(p, 'InstanceType');
      if (!cloud.types.get(typeId))
        throw new CloudError(
          400,
          'InvalidInstanceType.NotFound',
          `The specified InstanceType does not exist: ${typeId}`,
        );
      const spot = cloud.spotPrice(typeId);
      const origin = cloud.types.get(typeId)!.pricePerHour;
      return {
        RequestId: requestId,
        NextOffset: 0,
        Currency: 'CNY',
        SpotPrices: {
          SpotPriceType:
            spot === undefined
              ? []
              : [
                  {
                    ZoneId: cloud.zoneId,
                    InstanceType: typeId,
                    IoOptimized: 'optimized',
                    NetworkType: network,
                    Timestamp: new Date(cloud.clock.now()).toISOString().replace(/\.\d{3}Z$/, 'Z'),
                    SpotPrice: spot,
                    OriginPrice: origin,
                  },
                ],
        },
      };
    }
    case 'DescribeInstances': {
      required(p, 'RegionId');
      const ids = jsonList(p.get('InstanceIds'), 'InstanceIds');
      const all = [...cloud.instances.values()].filter((i) => ids.length === 0 || ids.includes(i.id));
      const size = p.get('PageSize') ? intParam(p.get('PageSize'), 'PageSize') : 10;
      if (size < 1 || size > 100)
        throw new CloudError(400, 'InvalidParameter', `PageSize must be from 1 to 100 (got ${size})`);
      const number = p.get('PageNumber') ? intParam(p.get('PageNumber'), 'PageNumber') : 1;
      const items = all.slice((number - 1) * size, number * size);
      return {
        RequestId: requestId,
        TotalCount: all.length,
        PageNumber: number,
        PageSize: size,
        Instances: { Instance: items.map((i) => instanceView(cloud, i)) },
      };
    }
    case 'DescribeInstanceHistoryEvents':
      return describeSystemEvents(cloud, p, requestId);
    case 'RebootInstance': {
      cloud.reboot(required(p, 'InstanceId'), {
        dryRun: bool(p.get('DryRun'), false),
        forceStop: bool(p.get('ForceStop'), false),
      });
      return { RequestId: requestId };
    }
    default:
      throw new CloudError(
        404,
        'InvalidAction.NotFound',
        `Specified api is not found, please check your url and method (ECS ${call.action}).`,
      );
  }
}

/** The request handler; `host` names the simulator in error bodies (`HostId`). */
export function createHandler(cloud: AliCloud, gatewayNow?: () => number) {
  // Nonce replay and date skew, refused after the signature is checked (replay.ts).
  const replay = new ReplayGuard(gatewayNow);
  return (req: IncomingMessage, res: ServerResponse): void => {
    const requestId = randomUUID().toUpperCase();
    const host = String(req.headers.host ?? 'localhost');
    void (async () => {
      const body = await readBody(
        req,
        MAX_BODY,
        () => new CloudError(413, 'InvalidParameter', 'request body too large'),
      );
      const url = req.url ?? '/';
      const q = url.indexOf('?');
      const path = q < 0 ? url : url.slice(0, q);
      const query = q < 0 ? '' : url.slice(q + 1);
      const signed = verify({ method: req.method ?? 'GET', path, query, headers: req.headers, body }, (id) =>
        cloud.secretOf(id),
      );
      const verdict = signed.ok ? replay.check(req.headers, signed.accessKeyId) : signed;
      if (!verdict.ok) {
        gatewayError(res, host, requestId, verdict.status, verdict.code, verdict.message);
        return;
      }
      const action = String(req.headers['x-acs-action'] ?? '');
      const version = String(req.headers['x-acs-version'] ?? '');
      const call: Call = {
        action,
        method: req.method ?? 'GET',
        segs: path
          .split('/')
          .filter((s) => s !== '')
          .map((s) => decodeURIComponent(s)),
        query: new URLSearchParams(query),
        body: body.toString('utf8'),
        contentType: String(req.headers['content-type'] ?? ''),
      };
      try {
        if (version !== CS && version !== ECS)
          throw new CloudError(
            404,
            'InvalidVersion',
            `Specified parameter Version is not valid (${version || 'missing'}); served: CS ${CS}, ECS ${ECS}.`,
          );
        cloud.admit(action, verdict.accessKeyId);
        send(res, 200, version === CS ? serveCs(cloud, call, requestId) : serveEcs(cloud, call, requestId), requestId);
      } catch (err) {
        if (!(err instanceof CloudError)) throw err;
        if (version === CS && !err.code.startsWith('Throttling'))
          send(res, err.status, { code: err.code, message: err.message, requestId, status: err.status }, requestId);
        else gatewayError(res, host, requestId, err.status, err.code, err.message);
      }
    })().catch((err: unknown) => {
      if (err instanceof CloudError) gatewayError(res, host, requestId, err.status, err.code, err.message);
      else
        gatewayError(
          res,
          host,
          requestId,
          500,
          'InternalError',
          `The request processing has failed due to some unknown error: ${(err as Error).message}`,
        );
    });
  };
}
