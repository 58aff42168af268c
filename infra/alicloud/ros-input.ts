import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';

/**
 * What the ROS template (ros-template.ts) reads of the repository: serverless.yml's functions and
 * their OOS parameters.
 */

/** What the template reads of one serverless.yml function. */
export interface ServerlessFunction {
  handler: string;
  /** serverless.yml's `role`: the AWS role whose ssm:GetParameter grants say which parameters it reads. */
  role?: string;
  timeout?: number;
  memorySize?: number;
  maximumRetryAttempts?: number;
  maximumEventAge?: number;
  environment?: Record<string, unknown>;
  events?: Record<string, unknown>[];
}

export interface AlibabaTemplateInput {
  stage: string;
  /** serverless.yml's `functions`. */
  functions: Record<string, ServerlessFunction>;
  /** serverless.yml's provider defaults. */
  defaults: { timeout: number; memorySize: number };
  /** A pattern file's path (as serverless.yml's `${file(./events/patterns/x.json)}` names it) → its JSON. */
  patterns: Record<string, unknown>;
  /** The ACK/ECS actions of infra/alicloud/ram-policy.json. */
  cloudActions: string[];
  /** serverless.yml's provider.environment (the parameters every function is told of). */
  providerEnvironment?: Record<string, unknown>;
  /** serverless.yml's resources.Resources (the functions' AWS roles). */
  awsResources?: Record<string, unknown>;
}

/**
 * The template's input as the repository at `root` holds it: serverless.yml (functions, provider
 * defaults and environment, the AWS roles), events/patterns/, infra/alicloud/ram-policy.json. What
 * `npm run package -- --target alibaba` and the template's test both read.
 */
export function alibabaTemplateInput(root: string, stage: string): AlibabaTemplateInput {
  const yml = parse(readFileSync(join(root, 'serverless.yml'), 'utf8'), { maxAliasCount: 100, logLevel: 'silent' }) as {
    provider: { timeout: number; memorySize: number; environment?: Record<string, unknown> };
    functions: Record<string, ServerlessFunction>;
    resources?: { Resources?: Record<string, unknown> };
  };
  const patterns = Object.fromEntries(
    readdirSync(join(root, 'events', 'patterns'))
      .filter((f) => f.endsWith('.json'))
      .map((f) => [`events/patterns/${f}`, JSON.parse(readFileSync(join(root, 'events', 'patterns', f), 'utf8'))]),
  ) as Record<string, unknown>;
  const policy = JSON.parse(readFileSync(join(root, 'infra', 'alicloud', 'ram-policy.json'), 'utf8')) as {
    Statement: { Action: string[] }[];
  };
  return {
    stage,
    functions: yml.functions,
    defaults: { timeout: yml.provider.timeout, memorySize: yml.provider.memorySize },
    patterns,
    cloudActions: policy.Statement.flatMap((s) => s.Action),
    ...(yml.provider.environment ? { providerEnvironment: yml.provider.environment } : {}),
    ...(yml.resources?.Resources ? { awsResources: yml.resources.Resources } : {}),
  };
}

/**
 * The `*_PARAMETER`s that hold secrets: on Alibaba, encrypted OOS parameters (`oos-secret:`); the
 * others (policies) common ones (`oos:`). Not carried over: the AccessKey parameter (FC's role
 * reaches Alibaba's APIs) and the kubeconfig parameter (ACK's DescribeClusterUserKubeconfig).
 */
const SECRET_PARAMETERS = new Set(['CHAT_SECRETS_PARAMETER', 'GPU_REFLEX_APPROVAL_KEY_PARAMETER']);
const NOT_ON_ALIBABA = new Set(['ALIBABA_CLOUD_ACCESS_KEY_PARAMETER', 'GPU_REFLEX_KUBECONFIG_PARAMETER']);

/** Every string inside a value (CloudFormation's !Join lists included). */
const strings = (v: unknown): string[] =>
  typeof v === 'string'
    ? [v]
    : Array.isArray(v)
      ? v.flatMap(strings)
      : v && typeof v === 'object'
        ? Object.values(v).flatMap(strings)
        : [];

/**
 * The parameters `f` reads on AWS, as OOS references on Alibaba: a `*_PARAMETER` of its environment
 * (or the provider's) whose Parameter Store name its AWS role may `ssm:GetParameter` — the same least
 * privilege, carried over. The OOS name is `gpu-reflex-<stage>-<variable in kebab case>`.
 */
export function oosParameters(
  input: AlibabaTemplateInput,
  f: ServerlessFunction,
): { variable: string; ref: string; name: string; secret: boolean }[] {
  const env = { ...(input.providerEnvironment ?? {}), ...(f.environment ?? {}) };
  const role = f.role
    ? (input.awsResources?.[f.role] as { Properties?: { Policies?: unknown } } | undefined)
    : undefined;
  const policies = role?.Properties?.Policies;
  const statements = (Array.isArray(policies) ? policies : []).flatMap(
    (p: { PolicyDocument?: { Statement?: unknown[] } }) =>
      (p.PolicyDocument?.Statement ?? []) as { Action?: unknown; Resource?: unknown }[],
  );
  const readable = statements
    .filter((st) => strings(st.Action).includes('ssm:GetParameter'))
    .flatMap((st) => strings(st.Resource));
  return Object.entries(env)
    .filter(([k, v]) => k.endsWith('_PARAMETER') && !NOT_ON_ALIBABA.has(k) && typeof v === 'string')
    .filter(([, v]) => readable.some((r) => r.includes(`parameter${v as string}`)))
    .map(([variable]) => {
      const secret = SECRET_PARAMETERS.has(variable);
      const name = `gpu-reflex-${input.stage}-${variable
        .replace(/^GPU_REFLEX_/, '')
        .replace(/_PARAMETER$/, '')
        .toLowerCase()
        .replace(/_/g, '-')}`;
      return { variable, name, secret, ref: `${secret ? 'oos-secret' : 'oos'}:${name}` };
    });
}
