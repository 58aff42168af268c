import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseFlags, portFlag } from '../../../events/cli-kit/flags.ts';
import { InputError, UsageError, type CliIo, type Command, untilSignal } from '../../../events/cli-kit/command.ts';
import { checkWritableFile, readInputText } from '../../../events/cli-kit/input.ts';
import { wallClock } from './clock.ts';
import { EXAMPLE_FLEET_PATH, FleetError, parseFleet, type ParsedFleet } from './fleet.ts';
import { startKubeSim, type KubeSim } from './index.ts';
import {
  DEFAULT_KUBERNETES_VERSION,
  KUBERNETES_VERSIONS,
  type ApiSettings,
  type KubernetesVersion,
} from './api-versions.ts';

/**
 * `gpu-reflex cluster serve`: the simulated cluster on its own, on the wall clock, until
 * SIGINT/SIGTERM. Tests build the command with `makeClusterServeCommand({ stop })` so they can
 * end it without signals.
 */
const HELP = `Usage: gpu-reflex cluster serve [--fleet FILE] [--port N] [--host ADDR] [--kubeconfig-out FILE]
                                [--kubernetes-version 1.3x] [--feature-gates G=true,…] [--runtime-config GV,…]

Runs the simulated Kubernetes API server (nodes, pods, evictions against PDBs, quotas, leases,
a scheduler and controllers) and writes a kubeconfig for it, so kubectl and
@kubernetes/client-node work against it unchanged. Grace periods run on the wall clock.

Options:
  --fleet FILE           fleet file (YAML or JSON); default: the built-in example fleet
  --port N               port to listen on; 0 lets the OS pick (default 0)
  --host ADDR            address to listen on (default 127.0.0.1)
  --kubeconfig-out FILE  where to write the kubeconfig (default: <tmpdir>/gpu-reflex-sim.kubeconfig)
  --kubernetes-version V the release served: ${KUBERNETES_VERSIONS.join(', ')} (default ${DEFAULT_KUBERNETES_VERSION});
                         it decides /version and which resource.k8s.io (DRA) versions are served
  --feature-gates LIST   as kube-apiserver's: DRADeviceTaints=true,DRADeviceTaintRules=true
  --runtime-config LIST  API versions off by default, turned on: resource.k8s.io/v1beta2,resource.k8s.io/v1alpha3

Example:
  gpu-reflex cluster serve --port 0 --kubeconfig-out /tmp/sim.yaml &
  kubectl --kubeconfig /tmp/sim.yaml get nodes`;

export interface ServeHooks {
  /** Resolves to stop the server; default: the first SIGINT or SIGTERM. */
  stop?: Promise<void>;
  /** Called once listening, with the running sim (tests read its URL). */
  onReady?: (sim: KubeSim) => void;
}

export function makeClusterServeCommand(hooks: ServeHooks = {}): Command {
  return {
    path: ['cluster', 'serve'],
    summary: 'run the simulated Kubernetes cluster alone and write a kubeconfig for it',
    help: HELP,
    async run(args: string[], io: CliIo): Promise<number> {
      const values = parseFlags(args, {
        fleet: { type: 'string' },
        port: { type: 'string' },
        host: { type: 'string' },
        'kubeconfig-out': { type: 'string' },
        'kubernetes-version': { type: 'string' },
        'feature-gates': { type: 'string' },
        'runtime-config': { type: 'string' },
      });
      const port = portFlag('port', values.port);
      const fleetPath = values.fleet ?? EXAMPLE_FLEET_PATH;
      const apis = apiSettings(values);
      const kubeconfigPath = values['kubeconfig-out'] ?? join(tmpdir(), 'gpu-reflex-sim.kubeconfig');
      // Every input is checked before the server starts: nothing is left listening on a refusal.
      let fleet: ParsedFleet;
      try {
        fleet = parseFleet(await readInputText(fleetPath, '--fleet', io), fleetPath);
      } catch (err) {
        throw err instanceof FleetError ? new InputError(err.message, { cause: err }) : err;
      }
      await checkWritableFile(kubeconfigPath, '--kubeconfig-out');
      let sim: KubeSim;
      try {
        sim = await startKubeSim({
          fleet,
          port,
          apis,
          clock: wallClock,
          ...(values.host ? { host: values.host } : {}),
        });
      } catch (err) {
        throw err instanceof FleetError ? new InputError(`${fleetPath}: ${err.message}`, { cause: err }) : err;
      }
      try {
        sim.writeKubeconfig(kubeconfigPath);
      } catch (err) {
        await sim.close();
        throw new InputError(`cannot write --kubeconfig-out ${kubeconfigPath}`, { cause: err });
      }
      io.out(`simulated cluster listening on ${sim.url}`);
      io.out(`Kubernetes ${sim.cluster.apis.version}: DRA served at ${draText(sim)}`);
      io.out(`fleet: ${fleetPath} (${sim.store.count('nodes')} nodes, ${sim.store.count('pods')} pods)`);
      io.out(`kubeconfig: ${kubeconfigPath}`);
      io.out(`try: kubectl --kubeconfig ${kubeconfigPath} get nodes`);
      hooks.onReady?.(sim);
      await (hooks.stop ?? untilSignal());
      await sim.close();
      io.out('simulated cluster stopped');
      return 0;
    },
  };
}

function apiSettings(values: {
  'kubernetes-version'?: string | undefined;
  'feature-gates'?: string | undefined;
  'runtime-config'?: string | undefined;
}): ApiSettings {
  const version = values['kubernetes-version'] ?? DEFAULT_KUBERNETES_VERSION;
  if (!(KUBERNETES_VERSIONS as readonly string[]).includes(version))
    throw new UsageError(`--kubernetes-version must be one of ${KUBERNETES_VERSIONS.join(', ')} (got "${version}")`);
  const featureGates: Record<string, boolean> = {};
  for (const item of (values['feature-gates'] ?? '').split(',').filter(Boolean)) {
    const m = /^([A-Za-z0-9]+)=(true|false)$/.exec(item.trim());
    if (!m) throw new UsageError(`--feature-gates: expected Name=true or Name=false (got "${item}")`);
    featureGates[m[1]!] = m[2] === 'true';
  }
  const runtimeConfig = (values['runtime-config'] ?? '')
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);
  return { kubernetesVersion: version as KubernetesVersion, featureGates, runtimeConfig };
}

function draText(sim: KubeSim): string {
  const rows = sim.cluster.apis.dra.map((r) => `${r.plural}/${r.version}`);
  return rows.length > 0 ? rows.join(', ') : 'none';
}

export const clusterServeCommand: Command = makeClusterServeCommand();
