/** `gpu-reflex bench [SUITE...] [--record FILE]`. */
import { appendFile } from 'node:fs/promises';
import { UsageError, type Command } from '../events/cli-kit/command.ts';
import { parseFlagsAndArgs } from '../events/cli-kit/flags.ts';
import { checkWritableFile } from '../events/cli-kit/input.ts';
import { machine, markdown, type BenchSuite } from './harness.ts';

/** Suites load lazily: each pulls in its own part of the stack. */
export const SUITES: Record<string, { summary: string; load: () => Promise<BenchSuite> }> = {
  agent: {
    summary: 'node agent: CPU, RSS, XID → PutEvents latency, throughput',
    load: async () => (await import('./agent.ts')).agentSuite,
  },
  publisher: {
    summary: 'agent publisher: throughput, publish→ack latency, spool replay',
    load: async () => (await import('./publisher.ts')).publisherBenchSuite,
  },
  remediation: {
    summary:
      'XID → node unschedulable through the embedded stack; storms at 1,500 and 10,000 nodes within the blast radius',
    load: async () => (await import('./remediation.ts')).remediationSuite,
  },
  bus: {
    summary: 'local EventBridge: PutEvents via the real SDK, delivery, cron',
    load: async () => (await import('../infra/local/bus/bench.ts')).busSuite,
  },
  autoscale: {
    summary:
      'scale-out planner: 10,000 pending pods × 50 pools, cost against cluster-autoscaler-style expanders and the ' +
      'exact optimum',
    load: async () => (await import('./autoscale.ts')).autoscaleSuite,
  },
  quota: {
    summary:
      'quota planner: 500 namespaces × 6 resources plan time; demand served and idle quota beside a static ' +
      'weight split',
    load: async () => (await import('./quota.ts')).quotaSuite,
  },
  mig: {
    summary:
      'MIG planner: 1,000 nodes × 8 GPUs solve time; satisfied demand against the exact optimum; beside a ' +
      'nos-style greedy',
    load: async () => (await import('./mig.ts')).migSuite,
  },
  deploy: {
    summary:
      'function artifacts: unpacked size; module init and first invocation beside a bare EventBridge-client import',
    load: async () => (await import('./deploy.ts')).deploySuite,
  },
  noise: {
    summary:
      'a GB200-size flood of application-class XIDs through agents, bus and functions in virtual time: nothing ' +
      'fenced or cordoned',
    load: async () => (await import('./noise.ts')).noiseSuite,
  },
  xid: {
    summary: 'kernel-log XID scan on 50 MB lines',
    load: async () => (await import('../node-agent/kmsg/scan.bench.ts')).xidScanBenchSuite,
  },
};

export const benchCommand: Command = {
  path: ['bench'],
  summary:
    'run the benchmarks (agent, publisher, remediation, bus, noise, xid, autoscale, quota, mig, deploy) and print ' +
    'their numbers',
  help: [
    'Usage: gpu-reflex bench [SUITE...] [--record FILE]',
    '',
    'Runs every suite, or the ones named, and prints each measurement with its target.',
    'Exit 1 when a measurement misses its target.',
    '  --record FILE   append the results as Markdown (machine and date included), e.g. docs/benchmarks.md',
    '',
    'Suites:',
    ...Object.entries(SUITES).map(([k, v]) => `  ${k.padEnd(14)} ${v.summary}`),
  ].join('\n'),
  async run(args, io) {
    const { values, positionals } = parseFlagsAndArgs(args, { record: { type: 'string' } });
    const names = positionals.length ? positionals : Object.keys(SUITES);
    for (const n of names)
      if (!SUITES[n]) throw new UsageError(`unknown suite "${n}" (known: ${Object.keys(SUITES).join(', ')})`);
    // Refused now, not after minutes of benchmarks.
    if (values.record) await checkWritableFile(values.record, '--record');
    io.out(`machine: ${machine()}`);
    let missed = 0;
    for (const n of names) {
      const suite = await SUITES[n]!.load();
      io.out(`\n== ${suite.name}: ${suite.summary}`);
      const rows = await suite.run((line) => io.err(`  … ${line}`));
      for (const r of rows) {
        io.out(
          (
            `  ${r.metric.padEnd(44)} ${String(Math.round(r.value * 100) / 100).padStart(10)} ${r.unit.padEnd(10)} ` +
            `${r.target ? `target ${r.target}` : ''} ${r.ok === false ? 'MISSED' : ''}`
          ).trimEnd(),
        );
        if (r.ok === false) missed++;
      }
      if (values.record) await appendFile(values.record, markdown(suite.name, rows, new Date()) + '\n');
    }
    return missed ? 1 : 0;
  },
};
