import { readFileSync } from 'node:fs';
import { errnoWords } from './errno-words.ts';
import { parse as parseYaml } from 'yaml';

/**
 * The environment `bus serve` gives the functions it runs in-process, as a Lambda's configuration:
 * publish back to this bus (not to whatever AWS account the shell has), and act on one named
 * cluster. `local` does the same through infra/local/stack-env.ts.
 *
 * The functions read exactly one cluster source (functions/config.ts): a kubeconfig file, a
 * kubeconfig's text, one fetched from Parameter Store or ACK, or the pod's service account. Without one every delivery
 * would fail and be
 * retried until it dead-letters, so the command refuses to start instead.
 */
export interface FunctionCluster {
  /** What the functions will read, for the start-up line: `kubeconfig /x (context c, server https://...)`. */
  description: string;
  /** The cluster variables to set; the other sources are unset (undefined), as the functions insist on one. */
  env: Record<string, string | undefined>;
}

/** Thrown when no single cluster source is given; the message is the one line the CLI prints. */
export class ClusterSourceError extends Error {
  override name = 'ClusterSourceError';
}

const SOURCES = [
  'KUBECONFIG',
  'GPU_REFLEX_KUBECONFIG_TEXT',
  'GPU_REFLEX_KUBECONFIG_PARAMETER',
  'GPU_REFLEX_KUBECONFIG_ACK',
  'GPU_REFLEX_IN_CLUSTER',
] as const;
const NONE = Object.fromEntries(SOURCES.map((k) => [k, undefined])) as Record<(typeof SOURCES)[number], undefined>;

/** `--kubeconfig FILE` wins; otherwise exactly one of the functions' own variables must be set. */
export function resolveFunctionCluster(
  flag: string | undefined,
  env: Record<string, string | undefined>,
  read = (f: string) => readFileSync(f, 'utf8'),
): FunctionCluster {
  if (flag !== undefined)
    return {
      description: `kubeconfig ${flag} (--kubeconfig; ${kubeconfigTarget(read, flag)})`,
      env: { ...NONE, KUBECONFIG: flag },
    };
  const set = SOURCES.filter((k) => (k === 'GPU_REFLEX_IN_CLUSTER' ? env[k] === 'true' : (env[k] ?? '') !== ''));
  if (set.length === 0) {
    throw new ClusterSourceError(
      'the functions need a cluster to act on: give --kubeconfig FILE or set KUBECONFIG (or ' +
        'GPU_REFLEX_KUBECONFIG_TEXT, or GPU_REFLEX_IN_CLUSTER=true)',
    );
  }
  if (set.length > 1)
    throw new ClusterSourceError(
      `the functions read exactly one cluster source, but ${set.join(' and ')} are set: unset all but one, or give ` +
        `--kubeconfig FILE`,
    );
  const source = set[0]!;
  const keep = { ...NONE, [source]: env[source] };
  if (source === 'KUBECONFIG')
    return {
      description: `kubeconfig ${env.KUBECONFIG} (KUBECONFIG; ${kubeconfigTarget(read, env.KUBECONFIG!)})`,
      env: keep,
    };
  if (source === 'GPU_REFLEX_KUBECONFIG_TEXT')
    return {
      description:
        `the kubeconfig in GPU_REFLEX_KUBECONFIG_TEXT ` + `(${describeKubeconfig(env.GPU_REFLEX_KUBECONFIG_TEXT!)})`,
      env: keep,
    };
  if (source === 'GPU_REFLEX_KUBECONFIG_PARAMETER')
    return {
      description: `the kubeconfig in Parameter Store ${env[source]} (fetched at the first delivery)`,
      env: keep,
    };
  if (source === 'GPU_REFLEX_KUBECONFIG_ACK')
    return {
      description:
        `ACK's kubeconfig for ${env.ACK_CLUSTER_ID ?? 'ACK_CLUSTER_ID'} (${env[source]} endpoint, fetched ` +
        `at the first delivery)`,
      env: keep,
    };
  return { description: 'the service account of this pod (GPU_REFLEX_IN_CLUSTER=true)', env: keep };
}

function kubeconfigTarget(read: (f: string) => string, file: string): string {
  let text: string;
  try {
    text = read(file);
  } catch (err) {
    throw new ClusterSourceError(`cannot read kubeconfig ${file}: ${errnoWords(err)}`);
  }
  // A file the functions could not load would be found out only at the first delivery, each one
  // failing and dead-lettering: refuse to start instead, as for a file that cannot be read.
  const said = describeKubeconfig(text);
  if (said === NOT_YAML || said === NO_CONTEXT)
    throw new ClusterSourceError(
      `cannot read kubeconfig ${file}: ` +
        (said === NOT_YAML ? 'not YAML' : 'it names no current-context, so the functions would reach no cluster'),
    );
  return said;
}

const NOT_YAML = 'not readable as YAML';
const NO_CONTEXT = 'no current-context';

/** `context c, server https://…` from a kubeconfig's current context; a best effort, never throws. */
export function describeKubeconfig(text: string): string {
  try {
    const doc = parseYaml(text, { maxAliasCount: 100 }) as {
      'current-context'?: string;
      contexts?: { name?: string; context?: { cluster?: string } }[];
      clusters?: { name?: string; cluster?: { server?: string } }[];
    } | null;
    const name = doc?.['current-context'];
    const cluster = doc?.contexts?.find((c) => c.name === name)?.context?.cluster;
    const server = doc?.clusters?.find((c) => c.name === cluster)?.cluster?.server;
    if (name === undefined) return NO_CONTEXT;
    return `context ${name}, server ${server ?? 'unknown'}`;
  } catch {
    return NOT_YAML;
  }
}

/**
 * Everything the functions see: the cluster, and this bus as their EventBridge (endpoint, region,
 * and dummy credentials: the local bus checks the SigV4 shape, never the secret). A session token
 * from the shell is dropped so no real credential is sent along.
 */
export function busFunctionEnv(
  cluster: FunctionCluster,
  o: { busUrl: string; region: string; busName?: string | undefined },
): Record<string, string | undefined> {
  return {
    ...cluster.env,
    AWS_ENDPOINT_URL_EVENTBRIDGE: o.busUrl,
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
    AWS_SESSION_TOKEN: undefined,
    AWS_REGION: o.region,
    ...(o.busName !== undefined ? { EVENT_BUS_NAME: o.busName } : {}),
  };
}
