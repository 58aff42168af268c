import { CloudError, type AliCloud } from './cloud.ts';
import { bool, intParam, jsonList, type Call, type Json } from './server-call.ts';
import { iso, poolView, taskView } from './server-views.ts';

/** CS / ACK 2015-12-15 (ROA): REST paths, JSON bodies, snake_case answers. */
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

export function serveCs(cloud: AliCloud, call: Call, requestId: string): Json {
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
