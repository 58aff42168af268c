/** Test wiring for autoscale-pools: the real adapter on the Alibaba Cloud simulator, the Kubernetes fakes. */
import type { AliCloudSim } from '../../infra/local/alicloud/index.ts';
import { AliCloudPools } from '../../functions/adapters/alicloud/client.ts';
import type { EventPublisher } from '../../functions/adapters/bus.ts';
import { RecordingNotifier } from '../../functions/adapters/chat/notifier.ts';
import type { ManualClock } from '../../functions/adapters/clock.ts';
import type { FakeKube } from '../../functions/adapters/kube/fake.ts';
import { silentLogger } from '../../functions/adapters/logger.ts';
import type { AutoscalePolicy } from '../../functions/lib/pool-policy.ts';
import type { AutoscaleDeps } from '../../functions/autoscale/run.ts';

export function simDeps(
  sim: AliCloudSim,
  kube: FakeKube,
  clock: ManualClock,
  publisher: EventPublisher,
  policy: AutoscalePolicy,
): AutoscaleDeps {
  const c = sim.connection;
  return {
    nodes: kube.nodes,
    pods: kube.pods,
    leases: kube.leases,
    state: kube.state,
    cloud: new AliCloudPools(
      {
        regionId: c.regionId,
        clusterId: c.clusterId,
        accessKeyId: c.accessKeyId,
        accessKeySecret: c.accessKeySecret,
        endpoint: c.endpoint,
        protocol: 'http',
      },
      clock,
    ),
    publisher,
    notifier: new RecordingNotifier(),
    clock,
    logger: silentLogger,
    holder: 'req-1',
    clusterId: c.clusterId,
    policy,
  };
}
