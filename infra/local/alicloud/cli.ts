import { parseFlags, portFlag } from '../../../events/cli-kit/flags.ts';
import { InputError, type CliIo, type Command, untilSignal } from '../../../events/cli-kit/command.ts';
import { checkWritableFile, readInputText } from '../../../events/cli-kit/input.ts';
import { systemClock } from '../../../events/clock.ts';
import { CloudError } from './cloud.ts';
import { CloudFileError, EXAMPLE_CLOUD_PATH, parseCloudFile, type ParsedCloudFile } from './cloud-file.ts';
import { startAliCloudSim, type AliCloudSim } from './index.ts';

/**
 * `gpu-reflex alicloud serve`: the Alibaba Cloud OpenAPI simulator on its own, on the wall clock,
 * until SIGINT/SIGTERM. Tests build it with `makeAliCloudServeCommand({ stop })`.
 */
const HELP = `Usage: gpu-reflex alicloud serve [--fleet FILE] [--port N] [--host ADDR] [--out FILE]

Runs a loopback Alibaba Cloud OpenAPI endpoint that the official SDKs (and gpu-reflex's adapter)
use unchanged: ACK node pools (CS 2015-12-15: DescribeClusterNodePools, ModifyClusterNodePool,
ScaleClusterNodePool, RemoveNodePoolNodes, DescribeTaskInfo) and ECS (2014-05-26:
DescribeInstanceTypes, DescribePrice, DescribeInstances, RebootInstance). Every request must be
signed with ACS3-HMAC-SHA256 by a known AccessKey. New instances boot after bootSeconds.

Options:
  --fleet FILE  cloud file (YAML or JSON): region, cluster id, AccessKeys, node pools, instance
                types and prices, timings, injected faults; default: the built-in example
  --port N      port to listen on; 0 lets the OS pick (default 0)
  --host ADDR   address to listen on (default 127.0.0.1)
  --out FILE    write {"endpoint","regionId","accessKeyId","accessKeySecret","clusterId"} as JSON

Example:
  gpu-reflex alicloud serve --out /tmp/alicloud.json &
  # then: new OpenApi.Config({ endpoint, accessKeyId, accessKeySecret, protocol: 'http' })`;

export interface ServeHooks {
  stop?: Promise<void>;
  onReady?: (sim: AliCloudSim) => void;
}

export function makeAliCloudServeCommand(hooks: ServeHooks = {}): Command {
  return {
    path: ['alicloud', 'serve'],
    summary: 'run the Alibaba Cloud OpenAPI simulator (ACK node pools, ECS) alone',
    help: HELP,
    async run(args: string[], io: CliIo): Promise<number> {
      const values = parseFlags(args, {
        fleet: { type: 'string' },
        port: { type: 'string' },
        host: { type: 'string' },
        out: { type: 'string' },
      });
      const port = portFlag('port', values.port);
      const path = values.fleet ?? EXAMPLE_CLOUD_PATH;
      let file: ParsedCloudFile;
      try {
        file = parseCloudFile(await readInputText(path, '--fleet', io), path);
      } catch (err) {
        throw err instanceof CloudFileError ? new InputError(err.message, { cause: err }) : err;
      }
      if (values.out) await checkWritableFile(values.out, '--out');
      let sim: AliCloudSim;
      try {
        sim = await startAliCloudSim({
          cloud: file,
          port,
          clock: systemClock,
          ...(values.host ? { host: values.host } : {}),
        });
      } catch (err) {
        throw err instanceof CloudError ? new InputError(`${path}: ${err.message}`, { cause: err }) : err;
      }
      if (values.out) {
        try {
          sim.writeConnection(values.out);
        } catch (err) {
          await sim.close();
          throw new InputError(`cannot write --out ${values.out}`, { cause: err });
        }
      }
      io.out(`Alibaba Cloud simulator listening on ${sim.url} (region ${file.regionId}, cluster ${file.clusterId})`);
      io.out(
        `node pools: ${file.pools.map((p) => `${p.id} (${p.size} × ${p.instanceTypes[0]})`).join(', ') || 'none'}`,
      );
      if (values.out) io.out(`connection: ${values.out}`);
      hooks.onReady?.(sim);
      await (hooks.stop ?? untilSignal());
      await sim.close();
      io.out('Alibaba Cloud simulator stopped');
      return 0;
    },
  };
}

export const aliCloudServeCommand: Command = makeAliCloudServeCommand();
