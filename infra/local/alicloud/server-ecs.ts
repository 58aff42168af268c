import { CloudError, type AliCloud } from './cloud.ts';
import { bool, intParam, jsonList, type Call, type Json } from './server-call.ts';
import { describeSystemEvents } from './system-events-api.ts';
import { instanceView } from './server-views.ts';

/** ECS 2014-05-26 (RPC): the action in `x-acs-action`, parameters in the query (or a form body), PascalCase answers. */

/** DescribeInstanceTypes: at most this many `InstanceTypes` in one call (ECS API reference). */
export const MAX_DESCRIBED_TYPES = 10;

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

export function serveEcs(cloud: AliCloud, call: Call, requestId: string): Json {
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
