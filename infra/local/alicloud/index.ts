import { writeFileSync } from 'node:fs';
import { listen } from '../http-kit.ts';
import { createServer, type Server } from 'node:http';
import { VirtualClock, type Clock } from '../../../events/clock.ts';
import { AliCloud } from './cloud.ts';
import { loadCloudFile, validateCloudFile, type CloudFile, type ParsedCloudFile } from './cloud-file.ts';
import { createHandler } from './server.ts';

/**
 * The Alibaba Cloud OpenAPI simulator: CS (ACK node pools, tasks, user kubeconfigs) and ECS (instance types, prices,
 * instances, reboot) on one loopback endpoint, checking ACS3-HMAC-SHA256 signatures, so the
 * official SDKs and our adapter run against it unchanged.
 *
 *   const sim = await startAliCloudSim({ cloud: EXAMPLE_CLOUD_PATH, clock });
 *   new OpenApi({ endpoint: sim.endpoint, protocol: 'http', ...sim.credentials })
 */
export interface AliCloudSimOptions {
  /** A cloud object, or a path to a YAML/JSON cloud file. None: an empty region with the default AccessKey. */
  cloud?: CloudFile | ParsedCloudFile | string;
  port?: number;
  host?: string;
  /** Boots, reboots and removals are timers on this clock. Default: a VirtualClock (tests advance it). */
  clock?: Clock;
  /**
   * The gateway's own time, which each request's `x-acs-date` must be within 15 minutes of (replay.ts).
   * Default: the machine's, which is what the SDKs sign with.
   */
  gatewayNow?: () => number;
}

/** What a client needs to reach the simulator: written by `--out` as JSON. */
export interface AliCloudConnection {
  /** `host:port`, as the SDKs' `endpoint` takes it (with `protocol: 'http'`). */
  endpoint: string;
  regionId: string;
  accessKeyId: string;
  accessKeySecret: string;
  clusterId: string;
}

export interface AliCloudSim {
  endpoint: string;
  url: string;
  server: Server;
  cloud: AliCloud;
  connection: AliCloudConnection;
  writeConnection(path: string): void;
  close(): Promise<void>;
}

export async function startAliCloudSim(options: AliCloudSimOptions = {}): Promise<AliCloudSim> {
  const file =
    typeof options.cloud === 'string' ? loadCloudFile(options.cloud) : validateCloudFile(options.cloud ?? {});
  const cloud = new AliCloud(file, options.clock ?? new VirtualClock());
  const server = createServer(createHandler(cloud, options.gatewayNow));
  const host = options.host ?? '127.0.0.1';
  const port = await listen(server, options.port ?? 0, host);
  const endpoint = `${host}:${port}`;
  const key = file.credentials[0]!;
  const connection: AliCloudConnection = {
    endpoint,
    regionId: file.regionId,
    accessKeyId: key.accessKeyId,
    accessKeySecret: key.accessKeySecret,
    clusterId: file.clusterId,
  };
  return {
    endpoint,
    url: `http://${endpoint}`,
    server,
    cloud,
    connection,
    writeConnection: (path) => writeFileSync(path, JSON.stringify(connection, null, 2) + '\n', { mode: 0o600 }),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
