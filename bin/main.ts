import { readFileSync } from 'node:fs';
import { processIo, UsageError, type CliIo, type Command } from './command.ts';

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
  { path: ['events', 'list'], summary: 'list every event detail-type with its source', load: async () => (await import('../events/cli.ts')).listCommand },
  { path: ['events', 'validate'], summary: 'validate event files against the catalog', load: async () => (await import('../events/cli.ts')).validateCommand },
  { path: ['events', 'schemas'], summary: 'write the JSON Schema of every detail-type', load: async () => (await import('../events/cli.ts')).schemasCommand },
  { path: ['bench'], summary: 'run the benchmarks and print their numbers with the machine and date', load: async () => (await import('../bench/cli.ts')).benchCommand },
  { path: ['xid', 'scan'], summary: 'print the XIDs found in a kernel log (dmesg, journald or /dev/kmsg)', load: async () => (await import('../node-agent/cli/xid-scan.ts')).xidScanCommand },
  { path: ['bus', 'serve'], summary: 'run the local EventBridge (PutEvents, rules, schedules, httpApi) on serverless.yml', load: async () => (await import('../infra/local/bus/cli.ts')).busServeCommand },
  { path: ['cluster', 'serve'], summary: 'run the simulated Kubernetes cluster alone and write a kubeconfig for it', load: async () => (await import('../infra/local/kube/cli.ts')).clusterServeCommand },
  { path: ['pattern', 'test'], summary: 'test an EventBridge pattern against an event, like aws events test-event-pattern', load: async () => (await import('../events/pattern-cli.ts')).patternTestCommand },
  { path: ['remediate', 'policy'], summary: 'check a remediation policy file and print the rules it yields', load: async () => (await import('../functions/remediate/cli.ts')).policyCommand },
  { path: ['remediate', 'plan'], summary: 'print the remediation plan for one event (dry run, no cluster)', load: async () => (await import('../functions/remediate/cli.ts')).planCommand },
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

export async function main(argv: string[], io: CliIo = processIo): Promise<number> {
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
      io.err(`gpu-reflex ${first}: choose one of: ${group.map((c) => c.path.slice(1).join(' ')).join(', ')}`);
      return 2;
    }
    io.err(`gpu-reflex: unknown command "${argv.join(' ')}". Run gpu-reflex --help for the list.`);
    return 2;
  }
  const command = await hit.entry.load();
  if (hit.rest.includes('--help') || hit.rest.includes('-h')) {
    io.out(command.help);
    return 0;
  }
  try {
    return await command.run(hit.rest, io);
  } catch (err) {
    if (err instanceof UsageError) {
      io.err(`gpu-reflex ${command.path.join(' ')}: ${err.message}`);
      io.err(command.help.split('\n')[0] ?? '');
      return 2;
    }
    throw err;
  }
}
