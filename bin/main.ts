import { readFileSync } from 'node:fs';
import { processIo, type CliIo, type Command } from '../events/cli-kit/command.ts';
import { debugText, describeFailure } from './errors.ts';

/**
 * The command table. Each command lives with the part it drives and is loaded only when chosen,
 * so `--help` and quick commands never pay for the Kubernetes client or koffi.
 */
interface Entry {
  path: readonly string[];
  summary: string;
  load: () => Promise<Command>;
}

export const commands: Entry[] = [
  {
    path: ['events', 'list'],
    summary: 'list every event detail-type with its source',
    load: async () => (await import('../events/cli.ts')).listCommand,
  },
  {
    path: ['events', 'validate'],
    summary: 'validate event files against the catalog',
    load: async () => (await import('../events/cli.ts')).validateCommand,
  },
  {
    path: ['events', 'schemas'],
    summary: 'write the JSON Schema of every detail-type',
    load: async () => (await import('../events/cli.ts')).schemasCommand,
  },
  {
    path: ['bench'],
    summary: 'run the benchmarks and print their numbers with the machine and date',
    load: async () => (await import('../bench/cli.ts')).benchCommand,
  },
  {
    path: ['xid', 'scan'],
    summary: 'print the XIDs found in a kernel log (dmesg, journald or /dev/kmsg)',
    load: async () => (await import('../node-agent/cli/xid-scan.ts')).xidScanCommand,
  },
  {
    path: ['xid', 'explain'],
    summary: "print what an XID means (NVIDIA's words) and what gpu-reflex does about it",
    load: async () => (await import('../node-agent/cli/xid-explain.ts')).xidExplainCommand,
  },
  {
    path: ['agent'],
    summary: 'run the node agent: NVML → events on the bus',
    load: async () => (await import('../node-agent/cli/agent.ts')).agentCommand,
  },
  {
    path: ['bus', 'serve'],
    summary: 'run the local EventBridge (PutEvents, rules, schedules, httpApi) on serverless.yml',
    load: async () => (await import('../infra/local/bus/cli.ts')).busServeCommand,
  },
  {
    path: ['cluster', 'serve'],
    summary: 'run the simulated Kubernetes cluster alone and write a kubeconfig for it',
    load: async () => (await import('../infra/local/kube/cli.ts')).clusterServeCommand,
  },
  {
    path: ['alicloud', 'serve'],
    summary: 'run the Alibaba Cloud OpenAPI simulator (ACK node pools, ECS) alone',
    load: async () => (await import('../infra/local/alicloud/cli.ts')).aliCloudServeCommand,
  },
  {
    path: ['local'],
    summary: 'run the whole pipeline on this machine (simulated cluster, bus, functions, agents on mock GPUs)',
    load: async () => (await import('../infra/local/cli.ts')).localCommand,
  },
  {
    path: ['simulate'],
    summary: 'run a scenario through the local stack on a virtual clock (seconds, reproducible)',
    load: async () => (await import('../infra/local/cli.ts')).simulateCommand,
  },
  {
    path: ['shadow'],
    summary: 'replay recorded agent events through the functions against a real cluster, writing nothing',
    load: async () => (await import('../infra/local/shadow.ts')).shadowCommand,
  },
  {
    path: ['pattern', 'test'],
    summary: 'test an EventBridge pattern against an event, like aws events test-event-pattern',
    load: async () => (await import('../events/pattern-cli.ts')).patternTestCommand,
  },
  {
    path: ['config', 'check'],
    summary: 'validate policy files offline, with the parsers the deployed functions use',
    load: async () => (await import('./config-check.ts')).configCheckCommand,
  },
  {
    path: ['remediate', 'policy'],
    summary: 'check a remediation policy file and print the rules it yields',
    load: async () => (await import('../functions/remediate/cli.ts')).policyCommand,
  },
  {
    path: ['remediate', 'reset-support'],
    summary: 'print where NVIDIA supports resetting one GPU (SKU × topology), each row with its source',
    load: async () => (await import('./reset-support.ts')).resetSupportCommand,
  },
  {
    path: ['approve'],
    summary: 'approve or reject a held-back remediation (puts Approval Decided on the bus)',
    load: async () => (await import('../functions/remediate/approve-cli.ts')).approveCommand,
  },
  {
    path: ['approvals', 'list'],
    summary: 'list the approvals in the store (open, approved-applied, rejected, expired)',
    load: async () => (await import('../functions/remediate/approve-cli.ts')).approvalsListCommand,
  },
  {
    path: ['status'],
    summary: 'show every node gpu-reflex holds: state, GPU, why, since when, fences, approvals waiting (reads only)',
    load: async () => (await import('../functions/remediate/status-cli.ts')).statusCommand,
  },
  {
    path: ['cost', 'report'],
    summary: 'GPU-hours and cost per team and namespace, idle share apart (reads the cluster)',
    load: async () => (await import('../functions/idle/cost-cli.ts')).costReportCommand,
  },
  {
    path: ['mig', 'validate'],
    summary: "check one GPU's MIG layout against its model: valid (and where each instance sits) or why not",
    load: async () => (await import('../functions/mig/cli.ts')).migValidateCommand,
  },
  {
    path: ['mig', 'plan'],
    summary:
      'print which idle MIG GPUs to relay so pending MIG pods can run (fleet file or live cluster; changes nothing)',
    // The fleet file is the simulated cluster's: its reader comes from the local stack, so the MIG
    // CLI (and the functions bundled with it) import no simulator.
    load: async () =>
      (await import('../functions/mig/cli.ts')).createMigPlanCommand(async (path) =>
        (await import('../infra/local/mig-fleet.ts')).readFleetForMig(path),
      ),
  },
  {
    path: ['mig', 'layouts'],
    summary: 'list every MIG layout one GPU of a model can hold',
    load: async () => (await import('../functions/mig/cli.ts')).migLayoutsCommand,
  },
  {
    path: ['chat', 'verify'],
    summary:
      'check a captured Slack, DingTalk or Feishu request the way the webhook does, and say why it would be refused',
    load: async () => (await import('../functions/chatops/cli.ts')).chatVerifyCommand,
  },
  {
    path: ['quota', 'plan'],
    summary: 'print the team quotas the rewriter would write (fleet file or live cluster; changes nothing)',
    // As for mig plan: the fleet file's reader is the local stack's.
    load: async () =>
      (await import('../functions/quota/cli.ts')).createQuotaPlanCommand(async (path) =>
        (await import('../infra/local/fleet-snapshot.ts')).fleetSnapshot(path),
      ),
  },
  {
    path: ['quota', 'rollback'],
    summary: "put gpu-reflex's team quotas back to the values before their last rewrite, and hold them",
    load: async () => (await import('../functions/quota/cli.ts')).quotaRollbackCommand,
  },
  {
    path: ['remediate', 'plan'],
    summary: 'print the remediation plan for one event, in dry run (from facts, or reading a live cluster)',
    load: async () => (await import('../functions/remediate/cli.ts')).planCommand,
  },
];

function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}

function overview(): string {
  const width = Math.max(...commands.map((c) => c.path.join(' ').length));
  return [
    'gpu-reflex: reflexes for Kubernetes GPU fleets.',
    '',
    'Usage: gpu-reflex <command> [options]',
    '',
    'Commands:',
    ...commands.map((c) => `  ${c.path.join(' ').padEnd(width)}  ${c.summary}`),
    '',
    'Options:',
    '  --help, -h     help for any command (gpu-reflex events validate --help)',
    '  --version, -v  print the version',
    '  --debug        on an unexpected error, print its stack (also GPU_REFLEX_DEBUG=1)',
    '',
    'Exit codes: 0 done, 1 failed (one line on stderr says why), 2 bad usage.',
  ].join('\n');
}

function groupHelp(name: string, group: Entry[]): string {
  const width = Math.max(...group.map((c) => c.path.join(' ').length));
  return [
    `Usage: gpu-reflex ${name} <command> [options]`,
    '',
    'Commands:',
    ...group.map((c) => `  ${c.path.join(' ').padEnd(width)}  ${c.summary}`),
    '',
    `Each has --help: gpu-reflex ${group[0]!.path.join(' ')} --help`,
  ].join('\n');
}

/** Longest command path that prefixes argv wins, so `events` alone lists its subcommands. */
function find(argv: string[]): { entry: Entry; rest: string[] } | undefined {
  let best: Entry | undefined;
  for (const c of commands) {
    if (c.path.every((w, i) => argv[i] === w) && (!best || c.path.length > best.path.length)) best = c;
  }
  return best ? { entry: best, rest: argv.slice(best.path.length) } : undefined;
}

/** `--debug` may stand anywhere before `--`; it is the dispatcher's, not the command's. */
function takeDebug(argv: string[]): { argv: string[]; debug: boolean } {
  const end = argv.indexOf('--');
  const head = end === -1 ? argv : argv.slice(0, end);
  const tail = end === -1 ? [] : argv.slice(end);
  const rest = head.filter((a) => a !== '--debug');
  return { argv: [...rest, ...tail], debug: rest.length !== head.length };
}

function debugFromEnv(env: NodeJS.ProcessEnv): boolean {
  const v = env.GPU_REFLEX_DEBUG?.toLowerCase();
  return v === '1' || v === 'true' || v === 'yes';
}

/** Prints one line for `err` (the stack too in debug) and returns the exit code. */
export function reportFailure(err: unknown, name: string, io: CliIo, debug: boolean): number {
  const f = describeFailure(err);
  const hint = f.exitCode === 2 && name !== 'gpu-reflex' ? ` (see ${name} --help)` : '';
  io.err(
    `${name}: ${debug && !f.expected ? f.message.replace(/ \(run with --debug for details\)$/, '') : f.message}${hint}`,
  );
  if (debug) io.err(debugText(err));
  return f.exitCode;
}

/**
 * Runs one command line and returns its exit code. Every failure a command throws ends here and
 * is reported by reportFailure: one line on stderr, never a stack unless --debug.
 */
export async function main(
  rawArgv: string[],
  io: CliIo = processIo,
  env: NodeJS.ProcessEnv = process.env,
): Promise<number> {
  const { argv, debug: debugFlag } = takeDebug(rawArgv);
  const debug = debugFlag || debugFromEnv(env);
  const first = argv[0];
  if (first === undefined || first === '--help' || first === '-h' || first === 'help') {
    io.out(overview());
    return first === undefined ? 2 : 0;
  }
  if (first === '--version' || first === '-v') {
    io.out(version());
    return 0;
  }
  const hit = find(argv);
  if (!hit) {
    const group = commands.filter((c) => c.path[0] === first);
    if (group.length > 0) {
      if (argv[1] === '--help' || argv[1] === '-h') {
        io.out(groupHelp(first, group));
        return 0;
      }
      const what = argv[1] === undefined ? 'name a command' : `unknown command "${argv.slice(1).join(' ')}"`;
      io.err(
        `gpu-reflex ${first}: ${what}; choose one of: ${group.map((c) => c.path.slice(1).join(' ')).join(', ')} (see ` +
          `gpu-reflex ${first} --help)`,
      );
      return 2;
    }
    io.err(`gpu-reflex: unknown command "${argv.join(' ')}". Run gpu-reflex --help for the list.`);
    return 2;
  }
  const name = `gpu-reflex ${hit.entry.path.join(' ')}`;
  try {
    const command = await hit.entry.load();
    if (hit.rest.includes('--help') || hit.rest.includes('-h')) {
      io.out(command.help);
      return 0;
    }
    return await command.run(hit.rest, io);
  } catch (err) {
    return reportFailure(err, name, io, debug);
  }
}

/**
 * `gpu-reflex xid scan | head -2`: a reader that went away is not an error worth a stack trace.
 * Called by the CLI's own entry (runProcess), never on import: the modules the commands import
 * (the node agent's shipped entry among them) must not have their process's stdout rewired.
 */
function exitQuietlyOnEpipe(): void {
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(0);
    throw err;
  });
}

/**
 * The process entry (bin/gpu-reflex.js): runs main, and reports what escapes it (an error thrown
 * later by a server, a stray rejection) the same way, so no path prints a bare stack.
 */
export async function runProcess(argv: string[]): Promise<void> {
  exitQuietlyOnEpipe();
  const { debug } = takeDebug(argv);
  const escaped = (err: unknown) => {
    const code = reportFailure(err, 'gpu-reflex', processIo, debug || debugFromEnv(process.env));
    process.exit(code);
  };
  // An unhandled rejection reaches this too (Node's default --unhandled-rejections=throw).
  process.on('uncaughtException', escaped);
  process.exitCode = await main(argv);
}
