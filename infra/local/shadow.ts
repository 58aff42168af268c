import { readFileSync } from 'node:fs';
import { parseFlags } from '../../events/cli-kit/flags.ts';
import { InputError, UsageError, type CliIo, type Command } from '../../events/cli-kit/command.ts';
import { readInputText } from '../../events/cli-kit/input.ts';
import { SOURCES } from '../../events/common.ts';
import { injectClock } from '../../functions/adapters/clock.ts';
import { onWouldWrite, type WouldWrite } from '../../functions/lib/wiring.ts';
import { busFunctionEnv, ClusterSourceError, resolveFunctionCluster } from './bus/function-env.ts';
import { ManualClock, startLocalBus, type EventEnvelope } from './bus/index.ts';
import { loadRoutingTable } from './bus/rules.ts';
import { ServerlessConfigError } from './bus/serverless-yaml.ts';
import { withEnv } from './stack-env.ts';
import { eventEntry } from './timeline.ts';
import { parseDuration, readRecordedEvents } from './shadow-input.ts';

export { parseDuration, readRecordedEvents } from './shadow-input.ts';

/**
 * `gpu-reflex shadow` (issue #31): the live run minus its writes, against a real cluster. The
 * agents' recorded events are replayed, at their own times, through the functions of serverless.yml
 * wired for a dry run (lib/wiring.ts): every Kubernetes write is refused at the port and listed,
 * later decisions see what earlier ones would have written (the dry-run overlay), no chat message
 * or approval request leaves, and what each function decided is printed hour by hour.
 */

const HELP = `Usage: gpu-reflex shadow --kubeconfig FILE --events FILE [--since DURATION] [--settle DURATION]
                        [--serverless FILE] [--json]

Shows what gpu-reflex would have done on your cluster, changing nothing: the node agents' recorded
events are replayed at their own times through the functions of serverless.yml, each wired for a
dry run. Every write to Kubernetes is refused at the functions' port and listed; later decisions
see what earlier ones would have written, as the live run would; no chat message, approval request
or cloud call that changes anything leaves. Decisions are made against the cluster as it is now.

The runbook's advice: run gpu-reflex in shadow for a week before you let it write.

Options:
  --kubeconfig FILE   the cluster to read (required); nothing is written to it
  --events FILE       the agents' events: JSON lines of EventBridge events (an archive replay, a
                      bus log), a JSON array of them, or a \`--report\` JSON of gpu-reflex local
  --since DURATION    replay only the last DURATION before the newest event (e.g. 24h, 90m, 7d)
  --settle DURATION   after the last event, let the schedules (the sweep) run this long (default 2m)
  --serverless FILE   the functions and rules to replay through (default ./serverless.yml)
  --json              one JSON object: the decisions, the refused writes, the failed deliveries

The functions read their policies from this shell's environment as \`bus serve\` gives them
(REMEDIATION_POLICY_FILE and the like); DRY_RUN is forced on.

Example:
  gpu-reflex shadow --kubeconfig ~/.kube/prod --events agent-events.jsonl --since 24h`;

export interface ShadowDecision {
  at: string;
  detailType: string;
  who: string;
  text: string;
  why?: string;
  detail: unknown;
}

export interface ShadowResult {
  cluster: string;
  replayed: number;
  /** Events left out: the functions' own (they are decided again), or older than --since. */
  skipped: number;
  decisions: ShadowDecision[];
  refusedWrites: { at: string; op: string; target: string }[];
  failedDeliveries: { at: string; function: string; error: string }[];
  /** Recorded events the bus refused as PutEvents would (a malformed detail, too large). */
  rejected: { at: string; id: string; error: string }[];
  /** Events a function received and let go, with its reason (a detail its schema refuses). */
  dropped: { at: string; function: string; reason: string }[];
}

export interface ShadowOptions {
  kubeconfig: string;
  events: EventEnvelope[];
  serverlessYml: string;
  sinceMs?: number;
  settleMs: number;
  env?: Record<string, string | undefined>;
}

/** What a write was about, in a few words: its first string arguments (a node, a namespace/name). */
function targetOf(w: WouldWrite): string {
  const words = w.args.flatMap((a) => {
    if (typeof a === 'string') return [a];
    const o = a as { name?: unknown; namespace?: unknown } | null;
    if (!o || typeof o !== 'object' || typeof o.name !== 'string') return [];
    return [typeof o.namespace === 'string' ? `${o.namespace}/${o.name}` : o.name];
  });
  return words.slice(0, 2).join(' ') || '-';
}

export async function runShadow(o: ShadowOptions): Promise<ShadowResult> {
  const ordered = [...o.events].sort((a, b) => Date.parse(a.time) - Date.parse(b.time));
  const newest = ordered.length > 0 ? Date.parse(ordered.at(-1)!.time) : 0;
  const replay = ordered.filter(
    (e) => e.source !== SOURCES.functions && (o.sinceMs === undefined || Date.parse(e.time) >= newest - o.sinceMs),
  );
  const env = o.env ?? process.env;
  const cluster = resolveFunctionCluster(o.kubeconfig, env);
  const region = env.AWS_REGION ?? 'us-east-1';
  const table = loadRoutingTable(o.serverlessYml, { region, account: '000000000000', env });
  const busName = env.EVENT_BUS_NAME ?? (table.buses.length === 1 ? table.buses[0] : undefined);
  const start = replay.length > 0 ? Date.parse(replay[0]!.time) - 1000 : Date.now();
  const clock = new ManualClock(start);
  const decisions: ShadowDecision[] = [];
  const refusedWrites: ShadowResult['refusedWrites'] = [];
  const failedDeliveries: ShadowResult['failedDeliveries'] = [];
  const rejected: ShadowResult['rejected'] = [];
  const dropped: ShadowResult['dropped'] = [];
  const iso = (ms: number) => new Date(ms).toISOString();
  // One clock: the functions decide at the recorded events' times (a drain's pause moves it too).
  injectClock({ now: () => clock.now(), sleep: async (ms) => clock.advance(ms) });
  const bus = await startLocalBus({ serverlessYml: o.serverlessYml, clock, region, port: 0, httpPort: 0 });
  const restoreEnv = withEnv({
    ...busFunctionEnv(cluster, { busUrl: bus.url, region, busName }),
    DRY_RUN: 'true',
    LOG_LEVEL: env.LOG_LEVEL ?? 'error',
  });
  const stopListening = onWouldWrite((w) => refusedWrites.push({ at: iso(w.at), op: w.op, target: targetOf(w) }));
  const stopFailures = bus.on('failed', (info) =>
    failedDeliveries.push({
      at: iso(info.at),
      function: info.function,
      error: `${info.error.name}: ${info.error.message}`,
    }),
  );
  // A handler that read an event and let it go says why (a detail its schema refuses): said, not lost.
  const stopDropped = bus.on('delivered', (i) => {
    const r = i.result as { status?: string; reason?: string } | undefined;
    if (r?.status === 'dropped')
      dropped.push({ at: iso(i.at), function: i.function, reason: String(r.reason ?? 'no reason given') });
  });
  try {
    for (const e of replay) {
      const at = Date.parse(e.time);
      if (at > clock.now()) await bus.advance(at - clock.now());
      const answer = await bus.put([
        {
          Source: e.source,
          DetailType: e['detail-type'],
          Detail: JSON.stringify(e.detail),
          Time: new Date(at),
          ...(busName ? { EventBusName: busName } : {}),
        },
      ]);
      const refused = answer.Entries.find((x) => 'ErrorCode' in x);
      if (refused && 'ErrorCode' in refused)
        rejected.push({ at: e.time, id: e.id, error: `${refused.ErrorCode}: ${refused.ErrorMessage}` });
      await bus.drain();
    }
    await bus.advance(o.settleMs);
    await bus.drain();
    for (const e of bus.events) {
      if (e.source !== SOURCES.functions) continue;
      const entry = eventEntry(Date.parse(e.time) - start, e, () => undefined);
      decisions.push({
        at: e.time,
        detailType: e['detail-type'],
        who: entry.who,
        text: entry.text,
        ...(entry.why ? { why: entry.why } : {}),
        detail: e.detail,
      });
    }
  } finally {
    stopFailures();
    stopDropped();
    stopListening();
    await bus.close();
    restoreEnv();
    injectClock(undefined);
  }
  return {
    cluster: cluster.description,
    replayed: replay.length,
    skipped: o.events.length - replay.length,
    decisions,
    refusedWrites,
    failedDeliveries,
    rejected,
    dropped,
  };
}

/** The result in words: decisions hour by hour, the refused writes, the failures, one last line. */
export function shadowText(r: ShadowResult): string[] {
  const out = [`shadow of ${r.cluster}: ${r.replayed} recorded events replayed (${r.skipped} left out)`];
  let hour = '';
  for (const d of r.decisions) {
    const h = `${d.at.slice(0, 13)}:00Z`;
    if (h !== hour) out.push('', `${(hour = h)}`);
    out.push(`  ${d.at.slice(11, 19)}  ${d.who.padEnd(16)} ${d.detailType}: ${d.text}`);
    if (d.why) out.push(`            why: ${d.why}`);
  }
  if (r.decisions.length === 0) out.push('', 'no function decided anything on these events');
  out.push('', `writes refused at the port (${r.refusedWrites.length}):`);
  for (const w of r.refusedWrites) out.push(`  ${w.at.slice(0, 19)}Z  ${w.op} ${w.target}`);
  if (r.rejected.length > 0) {
    out.push('', `recorded events the bus refused (${r.rejected.length}):`);
    for (const x of r.rejected) out.push(`  ${x.at}  ${x.id}: ${x.error}`);
  }
  if (r.dropped.length > 0) {
    out.push('', `events a function let go (${r.dropped.length}):`);
    for (const x of r.dropped) out.push(`  ${x.at.slice(0, 19)}Z  ${x.function}: ${x.reason}`);
  }
  if (r.failedDeliveries.length > 0) {
    out.push('', `deliveries that failed (${r.failedDeliveries.length}) — a live run would have retried them:`);
    for (const f of r.failedDeliveries) out.push(`  ${f.at.slice(0, 19)}Z  ${f.function}: ${f.error}`);
  }
  out.push(
    '',
    `shadow: ${r.decisions.length} decisions, ${r.refusedWrites.length} writes refused; nothing in the cluster changed`,
  );
  return out;
}

export function makeShadowCommand(): Command {
  return {
    path: ['shadow'],
    summary: 'replay recorded agent events through the functions against a real cluster, writing nothing',
    help: HELP,
    async run(args: string[], io: CliIo): Promise<number> {
      const values = parseFlags(args, {
        kubeconfig: { type: 'string' },
        events: { type: 'string' },
        since: { type: 'string' },
        settle: { type: 'string' },
        serverless: { type: 'string' },
        json: { type: 'boolean' },
      });
      if (!values.kubeconfig) throw new UsageError('--kubeconfig FILE is required: shadow reads your cluster');
      if (!values.events) throw new UsageError("--events FILE is required: the agents' recorded events to replay");
      const sinceMs = values.since === undefined ? undefined : parseDuration(values.since, '--since');
      const settleMs = values.settle === undefined ? 120_000 : parseDuration(values.settle, '--settle');
      const events = readRecordedEvents(await readInputText(values.events, '--events', io), values.events);
      const serverlessYml = values.serverless ?? 'serverless.yml';
      let result: ShadowResult;
      try {
        readFileSync(serverlessYml);
        result = await runShadow({
          kubeconfig: values.kubeconfig,
          events,
          serverlessYml,
          settleMs,
          ...(sinceMs !== undefined ? { sinceMs } : {}),
        });
      } catch (err) {
        if (err instanceof ClusterSourceError || err instanceof ServerlessConfigError)
          throw new InputError(err.message, { cause: err });
        throw err;
      }
      if (values.json) io.out(JSON.stringify(result, null, 2));
      else for (const l of shadowText(result)) io.out(l);
      return 0;
    },
  };
}

export const shadowCommand: Command = makeShadowCommand();
