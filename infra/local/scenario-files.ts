import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { ParsedFleet } from './kube/fleet.ts';
import { loadPolicyFile, PolicyFileError } from '../../functions/remediate/core/policy-file.ts';
import type { Policy } from '../../functions/remediate/core/policy.ts';
import { AutoscalePolicyError, parseAutoscalePolicy, type AutoscalePolicy } from '../../functions/lib/pool-policy.ts';
import { NODEPOOL_LABEL } from '../../functions/autoscale/run.ts';
import { CloudFileError, parseCloudFile, type ParsedCloudFile } from './alicloud/cloud-file.ts';
import { parseQuotaConfig, QuotaConfigError, type QuotaConfig } from '../../functions/quota/core/config.ts';
import { LabelerConfigError, parseLabelerConfig, type LabelerConfig } from '../../functions/labels/core/config.ts';
import { IdlePolicyError, parseIdlePolicy, type IdlePolicy } from '../../functions/idle/core/policy.ts';
import { MigPolicyError, parseMigPolicy, type MigPolicy } from '../../functions/mig/core/policy.ts';
import { ScenarioError } from './scenario-error.ts';

/**
 * The files a scenario names (or holds inline): each read and checked as the functions will read it,
 * so a bad one is named at load time with its file and field.
 */

export function readIdle(
  ref: string | Record<string, unknown>,
  source: string,
  baseDir: string,
): { text: string; policy: IdlePolicy } {
  const { text, name } = readText(ref, 'idle', source, baseDir);
  try {
    return { text, policy: parseIdlePolicy(text, name) };
  } catch (err) {
    if (err instanceof IdlePolicyError) throw new ScenarioError(`${source}: idle: ${err.message}`);
    throw err;
  }
}

export function readMig(
  ref: string | Record<string, unknown>,
  source: string,
  baseDir: string,
): { text: string; policy: MigPolicy } {
  const { text, name } = readText(ref, 'mig', source, baseDir);
  try {
    return { text, policy: parseMigPolicy(text, name) };
  } catch (err) {
    if (err instanceof MigPolicyError) throw new ScenarioError(`${source}: mig: ${err.message}`);
    throw err;
  }
}

export function readLabels(
  ref: string | Record<string, unknown>,
  source: string,
  baseDir: string,
): { text: string; config: LabelerConfig } {
  const { text, name } = readText(ref, 'labels', source, baseDir);
  try {
    return { text, config: parseLabelerConfig(text, name) };
  } catch (err) {
    if (err instanceof LabelerConfigError) throw new ScenarioError(`${source}: labels: ${err.message}`);
    throw err;
  }
}

export function readQuota(
  ref: string | Record<string, unknown>,
  source: string,
  baseDir: string,
): { text: string; config: QuotaConfig } {
  const { text, name } = readText(ref, 'quota', source, baseDir);
  try {
    return { text, config: parseQuotaConfig(text, name) };
  } catch (err) {
    if (err instanceof QuotaConfigError) throw new ScenarioError(`${source}: quota: ${err.message}`);
    throw err;
  }
}

function readText(
  ref: string | Record<string, unknown>,
  what: string,
  source: string,
  baseDir: string,
): { text: string; name: string } {
  if (typeof ref !== 'string') return { text: JSON.stringify(ref, null, 2), name: `${source} (${what})` };
  const name = resolve(baseDir, ref);
  try {
    return { text: readFileSync(name, 'utf8'), name };
  } catch (err) {
    throw new ScenarioError(
      `${source}: ${what}: cannot read ${name}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
    );
  }
}

/** The cloud file; a pool's initial instances are the fleet's nodes labelled with its id. */
export function readCloud(
  ref: string | Record<string, unknown>,
  source: string,
  baseDir: string,
  fleet: ParsedFleet,
): ParsedCloudFile {
  const { text, name } = readText(ref, 'cloud', source, baseDir);
  let cloud: ParsedCloudFile;
  try {
    cloud = parseCloudFile(text, name);
  } catch (err) {
    if (err instanceof CloudFileError) throw new ScenarioError(`${source}: cloud: ${err.message}`);
    throw err;
  }
  const members = (poolId: string) =>
    fleet.nodes.flatMap((g) =>
      g.labels?.[NODEPOOL_LABEL] === poolId
        ? g.count === undefined
          ? [g.name]
          : Array.from({ length: g.count }, (_, i) => `${g.name}-${i}`)
        : [],
    );
  return {
    ...cloud,
    pools: cloud.pools.map((p) => ({
      ...p,
      nodeNames: p.nodeNames.length > 0 ? p.nodeNames : members(p.id),
      size: Math.max(p.size, (p.nodeNames.length > 0 ? p.nodeNames : members(p.id)).length),
    })),
  };
}

export function readAutoscale(
  ref: string | Record<string, unknown>,
  source: string,
  baseDir: string,
): { text: string; policy: AutoscalePolicy } {
  const { text, name } = readText(ref, 'autoscale', source, baseDir);
  try {
    return { text, policy: parseAutoscalePolicy(text, name) };
  } catch (err) {
    if (err instanceof AutoscalePolicyError) throw new ScenarioError(`${source}: autoscale: ${err.message}`);
    throw err;
  }
}

/** The scenario's policy, loaded as the functions will load it: a bad one names its file, line and field. */
export function readPolicy(
  policy: string | Record<string, unknown>,
  source: string,
  baseDir: string,
): { text: string; policy: Policy } {
  let text: string;
  let name: string;
  if (typeof policy === 'string') {
    name = resolve(baseDir, policy);
    try {
      text = readFileSync(name, 'utf8');
    } catch (err) {
      throw new ScenarioError(
        `${source}: policy: cannot read ${name}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      );
    }
  } else {
    name = `${source} (policy)`;
    text = JSON.stringify(policy, null, 2);
  }
  try {
    return { text, policy: loadPolicyFile(text, name).policy };
  } catch (err) {
    if (err instanceof PolicyFileError) throw new ScenarioError(`${source}: policy:\n  ${err.problems.join('\n  ')}`);
    throw err;
  }
}
