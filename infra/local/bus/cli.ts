import { parseFlags, portFlag } from '../../../events/cli-kit/flags.ts';
import { UsageError, type CliIo, type Command, untilSignal } from '../../../events/cli-kit/command.ts';
import { checkWritableFile } from '../../../events/cli-kit/input.ts';
import { withEnv } from '../stack-env.ts';
import { busFunctionEnv, ClusterSourceError, resolveFunctionCluster, type FunctionCluster } from './function-env.ts';
import { startLocalBus, type LocalBus } from './index.ts';
import { loadRoutingTable } from './rules.ts';
import { ServerlessConfigError } from './serverless-yaml.ts';
import { printTimeline } from './timeline.ts';

/**
 * `gpu-reflex bus serve`: the local EventBridge alone, on the wall clock, until SIGINT/SIGTERM,
 * printing a line for everything it delivers. Tests build it with `makeBusServeCommand({ stop })`.
 */
const HELP =
  `Usage: gpu-reflex bus serve [--kubeconfig FILE] [--serverless FILE] [--port N] [--http-port N] [--host ADDR] ` +
  `[--dlq FILE] [--stage S] [--region R] [--account ID] [--history N]

Runs the local EventBridge: a PutEvents endpoint the real AWS SDK talks to, the rules, schedules
and httpApi routes of serverless.yml, and the handlers in-process with EventBridge-like retries.
Prints one line per delivery, failure, dead letter and schedule firing.

The functions publish back to this bus (endpoint, region and test credentials are set for them,
never your AWS account) and act on the cluster of --kubeconfig, else of KUBECONFIG
(or GPU_REFLEX_KUBECONFIG_TEXT, or GPU_REFLEX_IN_CLUSTER=true); with none of them it does not
start, since every delivery would fail. The start-up lines say which cluster it is.

Options:
  --kubeconfig FILE  the cluster the functions act on (default: $KUBECONFIG)
  --serverless FILE  serverless.yml to route from (default ./serverless.yml)
  --port N           PutEvents port; 0 lets the OS pick (default 0)
  --http-port N      httpApi port; 0 lets the OS pick (default 0)
  --host ADDR        listen address (default 127.0.0.1)
  --dlq FILE         append dead letters to this JSON-lines file
  --stage S          stage for \${sls:stage} (default provider.stage, else dev)
  --region R         region in envelopes and ARNs (default us-east-1)
  --account ID       account in envelopes and ARNs (default 000000000000)
  --history N        accepted events and dead letters kept in memory: the last N (default 10000)

Example:
  gpu-reflex cluster serve --kubeconfig-out /tmp/sim.kubeconfig &
  gpu-reflex bus serve --kubeconfig /tmp/sim.kubeconfig --port 4010 &
  AWS_ENDPOINT_URL_EVENTBRIDGE=http://127.0.0.1:4010 gpu-reflex agent`;

export interface BusServeHooks {
  /** Resolves to stop; default: the first SIGINT or SIGTERM. */
  stop?: Promise<void>;
  /** Called once listening (tests read the URLs). */
  onReady?: (bus: LocalBus) => void;
}

export function makeBusServeCommand(hooks: BusServeHooks = {}): Command {
  return {
    path: ['bus', 'serve'],
    summary: 'run the local EventBridge (PutEvents, rules, schedules, httpApi) on serverless.yml',
    help: HELP,
    async run(args: string[], io: CliIo): Promise<number> {
      const values = parseFlags(args, {
        kubeconfig: { type: 'string' },
        serverless: { type: 'string' },
        port: { type: 'string' },
        'http-port': { type: 'string' },
        host: { type: 'string' },
        dlq: { type: 'string' },
        stage: { type: 'string' },
        region: { type: 'string' },
        account: { type: 'string' },
        history: { type: 'string' },
      });
      if (values.account !== undefined && !/^\d{12}$/.test(values.account))
        throw new UsageError(`--account must be 12 digits (got "${values.account}")`);
      // Refused now, not at the first dead letter.
      if (values.dlq) await checkWritableFile(values.dlq, '--dlq');
      const historySize = values.history === undefined ? undefined : Number(values.history);
      if (historySize !== undefined && (!/^\d+$/.test(values.history!) || !Number.isSafeInteger(historySize)))
        throw new UsageError(`--history must be a whole number of events (got "${values.history}")`);
      const port = portFlag('port', values.port);
      const httpPort = portFlag('http-port', values['http-port']);
      const serverlessYml = values.serverless ?? 'serverless.yml';
      const region = values.region ?? 'us-east-1';
      let cluster: FunctionCluster | undefined;
      try {
        // Read before anything listens: a bus whose functions have no cluster would only
        // fail every delivery until it dead-letters.
        const table = loadRoutingTable(serverlessYml, {
          region,
          account: values.account ?? '000000000000',
          env: process.env,
          ...(values.stage ? { stage: values.stage } : {}),
        });
        const delivers = table.eventRules.length + table.schedules.length + table.routes.length > 0;
        if (delivers || values.kubeconfig !== undefined)
          cluster = resolveFunctionCluster(values.kubeconfig, process.env);
      } catch (err) {
        if (err instanceof ClusterSourceError && err.message.startsWith('cannot read')) {
          io.err(`gpu-reflex bus serve: ${err.message}`);
          return 1;
        }
        if (err instanceof ClusterSourceError) throw new UsageError(err.message);
        if (err instanceof ServerlessConfigError) {
          io.err(`gpu-reflex bus serve: ${err.message}`);
          return 1;
        }
        throw err;
      }
      let bus: LocalBus;
      try {
        bus = await startLocalBus({
          serverlessYml,
          port,
          httpPort,
          ...(values.host ? { host: values.host } : {}),
          ...(values.dlq ? { dlqPath: values.dlq } : {}),
          ...(values.stage ? { stage: values.stage } : {}),
          region,
          ...(historySize !== undefined ? { historySize } : {}),
          ...(values.account ? { account: values.account } : {}),
        });
      } catch (err) {
        if (err instanceof ServerlessConfigError) {
          io.err(`gpu-reflex bus serve: ${(err as Error).message}`);
          return 1;
        }
        // A port in use and the like: the CLI kit says it in words (`cannot listen on …: address already in use`).
        throw err;
      }
      const t = bus.table;
      io.out(`PutEvents: ${bus.url}   (AWS_ENDPOINT_URL_EVENTBRIDGE=${bus.url})`);
      io.out(`httpApi:   ${bus.httpUrl ?? '-'}`);
      if (t) {
        io.out(
          `${t.service} (${t.stage}): buses ${['default', ...t.buses].join(', ')}; ${t.eventRules.length} ` +
            `rules, ${t.schedules.length} schedules, ${t.routes.length} routes`,
        );
        for (const w of t.warnings) io.err(`warning: ${w}`);
      }
      // The functions run in this process: for as long as the bus runs, their environment points
      // them at it and at the chosen cluster; it is put back when the bus stops.
      let restoreEnv = () => {};
      if (cluster) {
        // EVENT_BUS_NAME as the shell has it, else the one bus serverless.yml declares.
        const busName = process.env.EVENT_BUS_NAME ?? (t?.buses.length === 1 ? t.buses[0] : undefined);
        restoreEnv = withEnv(busFunctionEnv(cluster, { busUrl: bus.url, region, busName }));
        io.out(`functions: act on ${cluster.description}; publish to ${busName ?? 'their default bus'} on ${bus.url}`);
      }
      const stopPrinting = printTimeline(bus, (line) => io.out(line));
      try {
        hooks.onReady?.(bus);
        await (hooks.stop ?? untilSignal());
      } finally {
        stopPrinting();
        await bus.close();
        restoreEnv();
      }
      io.out('local bus stopped');
      return 0;
    },
  };
}

export const busServeCommand: Command = makeBusServeCommand();
