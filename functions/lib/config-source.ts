/**
 * Where a function's own configuration comes from. Each policy has three spellings, one at a time:
 *
 *   <NAME>_FILE        a path (a laptop, the embedded stack, a container image with the file baked in)
 *   <NAME>_PARAMETER   an SSM Parameter Store name (String or SecureString), read with the
 *                      function's own role at its first invocation and again every
 *                      CONFIG_REFRESH_MINUTES, so a `put-parameter` takes effect without a deploy
 *   <NAME>_TEXT        the document itself (what the parameter's value becomes inside the wiring)
 *
 * The same parser reads all three, so a deployed function refuses a bad policy with the very error
 * `gpu-reflex config check` prints (functions/config-check.ts). A parameter that does not exist is
 * the defaults, logged once per wiring with the command that sets it; every other failure (denied,
 * wrong type, empty, bad content) is a ConfigError naming the parameter.
 */
import { ConfigError } from '../config.ts';

/** The policies a function reads, by their `_FILE` variable, and what each is called in errors. */
export const CONFIG_DOCUMENTS = {
  REMEDIATION_POLICY_FILE: 'remediation policy',
  MIG_POLICY_FILE: 'MIG policy',
  AUTOSCALE_POLICY_FILE: 'autoscale policy',
  QUOTA_CONFIG_FILE: 'quota config',
  LABELER_CONFIG_FILE: 'labeler config',
  CHATOPS_CONFIG_FILE: 'chatops config',
  IDLE_POLICY_FILE: 'idle policy',
} as const;

export type ConfigVariable = keyof typeof CONFIG_DOCUMENTS;

/** A changed parameter reaches warm containers within this many minutes (lib/wiring.ts renews). */
export const CONFIG_REFRESH_MINUTES = 5;

const base = (variable: string) => variable.replace(/_FILE$/, '');
export const parameterVariable = (variable: ConfigVariable) => `${base(variable)}_PARAMETER`;
export const textVariable = (variable: ConfigVariable) => `${base(variable)}_TEXT`;
/** Where the `_TEXT` came from, for errors (`REMEDIATION_POLICY_PARAMETER (ssm:/gpu-reflex/prod/…)`). */
const sourceVariable = (variable: ConfigVariable) => `${base(variable)}_SOURCE`;

export type ReadParameter = (parameter: string, label: string) => Promise<string | undefined>;

export interface ParameterResolution {
  /** The environment with each `_PARAMETER`'s value as its `_TEXT`. */
  env: NodeJS.ProcessEnv;
  /** The parameters read (found or not): the wiring renews while any is set. */
  read: string[];
  /** Parameters that do not exist: those policies are the defaults. */
  missing: { variable: string; parameter: string; label: string }[];
}

/**
 * Reads every `<NAME>_PARAMETER` the environment sets into `<NAME>_TEXT`. Setting two spellings of
 * one policy is an error: which one wins would be a guess.
 */
export async function resolveConfigParameters(
  env: NodeJS.ProcessEnv,
  read: ReadParameter,
  /** Only these policies (an acknowledgement needs the chat roles alone); absent: every one. */
  only?: readonly ConfigVariable[],
): Promise<ParameterResolution> {
  const out: NodeJS.ProcessEnv = { ...env };
  const resolution: ParameterResolution = { env: out, read: [], missing: [] };
  for (const [variable, label] of Object.entries(CONFIG_DOCUMENTS) as [ConfigVariable, string][]) {
    if (only && !only.includes(variable)) continue;
    const set = [variable, parameterVariable(variable), textVariable(variable)].filter((v) => env[v]);
    if (set.length > 1)
      throw new ConfigError(
        `bad configuration: ${set.join(' and ')} are both set; the ${label} comes from one of them`,
      );
    const parameter = env[parameterVariable(variable)];
    if (!parameter) continue;
    resolution.read.push(parameter);
    const text = await read(parameter, label).catch((err: unknown) => {
      throw new ConfigError(`bad configuration: ${parameterVariable(variable)}: ${(err as Error).message}`);
    });
    if (text === undefined) {
      resolution.missing.push({ variable: parameterVariable(variable), parameter, label });
      continue;
    }
    out[textVariable(variable)] = text;
    out[sourceVariable(variable)] = `${parameterVariable(variable)} (ssm:${parameter})`;
  }
  return resolution;
}

/** The command that creates a missing parameter, for the log line that says the defaults apply. */
export function putParameterHint(parameter: string, file = 'policy.yaml'): string {
  return `aws ssm put-parameter --name ${parameter} --type String --value file://${file} --overwrite`;
}

/** A policy's text and where it came from, or undefined when none of its spellings is set. */
export function configTextFromEnv(
  env: NodeJS.ProcessEnv,
  variable: ConfigVariable,
  readFile: (path: string) => string,
): { text: string; source: string } | undefined {
  const text = env[textVariable(variable)];
  if (text) return { text, source: env[sourceVariable(variable)] ?? textVariable(variable) };
  const parameter = env[parameterVariable(variable)];
  // Set but not turned into text: either missing (defaults, logged by the wiring) or read outside
  // the wiring (a test, a CLI) where no store was asked.
  if (parameter) return undefined;
  const file = env[variable];
  if (!file) return undefined;
  try {
    return { text: readFile(file), source: file };
  } catch (err) {
    throw new ConfigError(
      `bad configuration: ${variable} ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
    );
  }
}
