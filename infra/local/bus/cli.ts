import { parseArgs } from 'node:util';
import { UsageError, type CliIo, type Command, untilSignal } from '../../../bin/command.ts';
import { checkWritableFile } from '../../../bin/input.ts';
import { startLocalBus, type LocalBus } from './index.ts';
import { ServerlessConfigError } from './serverless-yaml.ts';
import { printTimeline } from './timeline.ts';

/**
 * `gpu-reflex bus serve`: the local EventBridge alone, on the wall clock, until SIGINT/SIGTERM,
 * printing a line for everything it delivers. Tests build it with `makeBusServeCommand({ stop })`.
 */
const HELP = `Usage: gpu-reflex bus serve [--serverless FILE] [--port N] [--http-port N] [--host ADDR] [--dlq FILE] [--stage S] [--region R] [--account ID]

Runs the local EventBridge: a PutEvents endpoint the real AWS SDK talks to, the rules, schedules
and httpApi routes of serverless.yml, and the handlers in-process with EventBridge-like retries.
Prints one line per delivery, failure, dead letter and schedule firing.

Options:
  --serverless FILE  serverless.yml to route from (default ./serverless.yml)
  --port N           PutEvents port; 0 lets the OS pick (default 0)
  --http-port N      httpApi port; 0 lets the OS pick (default 0)
  --host ADDR        listen address (default 127.0.0.1)
  --dlq FILE         append dead letters to this JSON-lines file
  --stage S          stage for \${sls:stage} (default provider.stage, else dev)
  --region R         region in envelopes and ARNs (default us-east-1)
  --account ID       account in envelopes and ARNs (default 000000000000)

Example:
  gpu-reflex bus serve --port 4010 &
  AWS_ENDPOINT_URL_EVENTBRIDGE=http://127.0.0.1:4010 gpu-reflex agent`;

export interface BusServeHooks {
  /** Resolves to stop; default: the first SIGINT or SIGTERM. */
  stop?: Promise<void>;
  /** Called once listening (tests read the URLs). */
  onReady?: (bus: LocalBus) => void;
}

function portOf(name: string, text: string | undefined): number {
  const n = text === undefined ? 0 : Number(text);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new UsageError(`--${name} must be an integer from 0 to 65535 (got "${text}")`);
  return n;
}

export function makeBusServeCommand(hooks: BusServeHooks = {}): Command {
  return {
    path: ['bus', 'serve'],
    summary: 'run the local EventBridge (PutEvents, rules, schedules, httpApi) on serverless.yml',
    help: HELP,
    async run(args: string[], io: CliIo): Promise<number> {
      let values;
      try {
        ({ values } = parseArgs({
          args,
          options: {
            serverless: { type: 'string' },
            port: { type: 'string' },
            'http-port': { type: 'string' },
            host: { type: 'string' },
            dlq: { type: 'string' },
            stage: { type: 'string' },
            region: { type: 'string' },
            account: { type: 'string' },
          },
          strict: true,
          allowPositionals: false,
        }));
      } catch (err) {
        throw new UsageError((err as Error).message);
      }
      if (values.account !== undefined && !/^\d{12}$/.test(values.account)) throw new UsageError(`--account must be 12 digits (got "${values.account}")`);
      // Refused now, not at the first dead letter.
      if (values.dlq) await checkWritableFile(values.dlq, '--dlq');
      let bus: LocalBus;
      try {
        bus = await startLocalBus({
          serverlessYml: values.serverless ?? 'serverless.yml',
          port: portOf('port', values.port),
          httpPort: portOf('http-port', values['http-port']),
          ...(values.host ? { host: values.host } : {}),
          ...(values.dlq ? { dlqPath: values.dlq } : {}),
          ...(values.stage ? { stage: values.stage } : {}),
          ...(values.region ? { region: values.region } : {}),
          ...(values.account ? { account: values.account } : {}),
        });
      } catch (err) {
        if (err instanceof ServerlessConfigError || (err as NodeJS.ErrnoException).code === 'EADDRINUSE') {
          io.err(`gpu-reflex bus serve: ${(err as Error).message}`);
          return 1;
        }
        throw err;
      }
      const t = bus.table;
      io.out(`PutEvents: ${bus.url}   (AWS_ENDPOINT_URL_EVENTBRIDGE=${bus.url})`);
      io.out(`httpApi:   ${bus.httpUrl ?? '-'}`);
      if (t) {
        io.out(`${t.service} (${t.stage}): buses ${['default', ...t.buses].join(', ')}; ${t.eventRules.length} rules, ${t.schedules.length} schedules, ${t.routes.length} routes`);
        for (const w of t.warnings) io.err(`warning: ${w}`);
      }
      const stopPrinting = printTimeline(bus, (line) => io.out(line));
      hooks.onReady?.(bus);
      await (hooks.stop ?? untilSignal());
      stopPrinting();
      await bus.close();
      io.out('local bus stopped');
      return 0;
    },
  };
}

export const busServeCommand: Command = makeBusServeCommand();
