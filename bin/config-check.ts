/**
 * `gpu-reflex config check`: validates policy files offline with the very parsers the deployed
 * functions use on the same text (from a file, or from Parameter Store: functions/lib/config-source.ts),
 * so what passes here is what a function accepts at its first invocation. Which policy a file is
 * comes from its name — the name of its parameter under /gpu-reflex/<stage>/config/ — or `--kind`.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import { basename, extname, join } from 'node:path';
import { parseChatOpsConfig } from '../functions/chatops/run.ts';
import { parseIdlePolicy } from '../functions/idle/core/policy.ts';
import { parseLabelerConfig } from '../functions/labels/core/config.ts';
import { parseAutoscalePolicy } from '../functions/lib/pool-policy.ts';
import { parseMigPolicy } from '../functions/mig/core/policy.ts';
import { parseQuotaConfig } from '../functions/quota/core/config.ts';
import { loadPolicyFile, PolicyFileError } from '../functions/remediate/core/policy-file.ts';
import { UsageError, type CliIo, type Command } from '../events/cli-kit/command.ts';
import { parseFlagsAndArgs } from '../events/cli-kit/flags.ts';

/** Each policy by its file (and parameter) name: its variable, and the function's own parser. */
const KINDS: Record<string, { variable: string; parse: (text: string, source: string) => unknown }> = {
  'remediation-policy': { variable: 'REMEDIATION_POLICY', parse: (t, s) => loadPolicyFile(t, s) },
  'mig-policy': { variable: 'MIG_POLICY', parse: parseMigPolicy },
  'autoscale-policy': { variable: 'AUTOSCALE_POLICY', parse: parseAutoscalePolicy },
  'quota-config': { variable: 'QUOTA_CONFIG', parse: parseQuotaConfig },
  'labeler-config': { variable: 'LABELER_CONFIG', parse: parseLabelerConfig },
  'chatops-config': { variable: 'CHATOPS_CONFIG', parse: parseChatOpsConfig },
  'idle-policy': { variable: 'IDLE_POLICY', parse: parseIdlePolicy },
};
const EXTENSIONS = new Set(['.yaml', '.yml', '.json']);

export const configCheckCommand: Command = {
  path: ['config', 'check'],
  summary: 'validate policy files offline, with the parsers the deployed functions use',
  help: [
    'Usage: gpu-reflex config check PATH... [--kind KIND]',
    '',
    'Each PATH is a policy file or a directory of them (its .yaml, .yml and .json files). Which',
    'policy a file holds comes from its name, the name of its Parameter Store parameter',
    '(/gpu-reflex/<stage>/config/<KIND>) — or from --kind for a single file named otherwise:',
    ...Object.entries(KINDS).map(([k, v]) => `  ${k.padEnd(20)} ${v.variable}_FILE / ${v.variable}_PARAMETER`),
    '',
    'Prints "ok" or every problem per file (file:line: field: what is wrong); exit code 1 when any',
    'file is refused, 2 for a usage error. Nothing is read from AWS or the cluster.',
    '',
    'Example: gpu-reflex config check examples/',
    '         aws ssm put-parameter --name /gpu-reflex/prod/config/mig-policy --type String \\',
    '           --value file://examples/mig-policy.yaml --overwrite',
  ].join('\n'),
  async run(args, io) {
    const { values, positionals } = parseFlagsAndArgs(args, { kind: { type: 'string' } });
    if (positionals.length === 0) throw new UsageError('expected a policy FILE or a directory of them');
    if (values.kind !== undefined && !KINDS[values.kind])
      throw new UsageError(`--kind ${values.kind}: not a policy (known: ${Object.keys(KINDS).join(', ')})`);
    const files = (await Promise.all(positionals.map(filesOf))).flat();
    if (values.kind !== undefined && files.length !== 1)
      throw new UsageError(`--kind names the policy of one file; ${files.length} given`);
    if (files.length === 0) throw new UsageError(`no .yaml, .yml or .json file in ${positionals.join(', ')}`);
    let refused = 0;
    for (const file of files) if (!(await checkOne(file, values.kind, io))) refused++;
    io.out(`${files.length - refused} of ${files.length} accepted`);
    return refused > 0 ? 1 : 0;
  },
};

async function filesOf(path: string): Promise<string[]> {
  const s = await stat(path).catch(() => {
    throw new UsageError(`${path}: no such file or directory`);
  });
  if (!s.isDirectory()) return [path];
  return (await readdir(path))
    .filter((f) => EXTENSIONS.has(extname(f)))
    .sort()
    .map((f) => join(path, f));
}

async function checkOne(file: string, kindFlag: string | undefined, io: CliIo): Promise<boolean> {
  const kind = kindFlag ?? basename(file, extname(file));
  const parser = KINDS[kind];
  if (!parser) {
    io.err(
      `${file}: which policy is it? name it after its parameter (${Object.keys(KINDS).join(', ')}) or pass --kind`,
    );
    return false;
  }
  try {
    parser.parse(await readFile(file, 'utf8'), file);
  } catch (err) {
    if (err instanceof PolicyFileError) for (const p of err.problems) io.err(p);
    else if (err instanceof Error && !(err instanceof TypeError) && !(err instanceof RangeError)) io.err(err.message);
    else throw err;
    return false;
  }
  io.out(`${file}: ok (${kind})`);
  return true;
}
