/**
 * The functions' configuration: environment variables parsed once at cold start with zod, then
 * frozen. Every variable is public interface and listed in the README.
 */
import * as z from 'zod';

const FunctionsEnvSchema = z.object({
  EVENT_BUS_NAME: z.string().min(1).default('gpu-reflex'),
  /**
   * The Alibaba target (docs/deploy-alibaba.md): Alibaba Cloud EventBridge's data-plane endpoint
   * `<account id>.eventbridge.<region>.aliyuncs.com`; set, the functions publish there instead of AWS.
   */
  ALIBABA_EVENTBRIDGE_ENDPOINT: z
    .string()
    .regex(/^[A-Za-z0-9.-]+(:\d+)?$/, 'a host (and port), without a scheme')
    .optional(),
  /** Path of a kubeconfig file (laptop, the embedded stack). */
  KUBECONFIG: z.string().min(1).optional(),
  /** A kubeconfig's text (local runs and tests: never packaged, it would sit in the template). */
  GPU_REFLEX_KUBECONFIG_TEXT: z.string().min(1).optional(),
  /** A Parameter Store SecureString (name or ARN) holding the kubeconfig, read at the first invocation. */
  GPU_REFLEX_KUBECONFIG_PARAMETER: z
    .string()
    .regex(
      /^(\/[\w.\-/]+|arn:aws[\w-]*:ssm:[\w-]+:\d{12}:parameter\/[\w.\-/]+|oos-secret:[\w-]+)$/,
      'a parameter name starting with / or its ARN (AWS), or oos-secret:<name> (Alibaba OOS)',
    )
    .optional(),
  /** ACK's DescribeClusterUserKubeconfig for ACK_CLUSTER_ID: the API server's `public` or `private` (VPC) endpoint. */
  GPU_REFLEX_KUBECONFIG_ACK: z.enum(['public', 'private']).optional(),
  /** How long ACK's temporary kubeconfig lasts (minutes, ACK's bounds); renewed at 80% of it. */
  GPU_REFLEX_KUBECONFIG_ACK_MINUTES: z.coerce.number().int().min(15).max(4320).default(60),
  /** EKS: the cluster's name; the token is made from the function's own IAM role (`aws eks get-token`'s). */
  GPU_REFLEX_KUBECONFIG_EKS: z
    .string()
    .regex(/^[0-9A-Za-z][A-Za-z0-9\-_]{0,99}$/, 'an EKS cluster name')
    .optional(),
  /**
   * With GPU_REFLEX_KUBECONFIG_EKS: the API server endpoint and its CA (DescribeCluster's `endpoint`,
   * `certificateAuthority.data`).
   */
  GPU_REFLEX_EKS_ENDPOINT: z.url({ protocol: /^https?$/ }).optional(),
  GPU_REFLEX_EKS_CA_DATA: z
    .string()
    .regex(/^[A-Za-z0-9+/=\s]+$/, 'base64')
    .optional(),
  /** Use the pod's service account (functions running inside the cluster). */
  GPU_REFLEX_IN_CLUSTER: z.stringbool().default(false),
  /** Namespace of gpu-reflex's own objects: the state ConfigMap and Leases. */
  GPU_REFLEX_NAMESPACE: z
    .string()
    .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/)
    .default('gpu-reflex'),
  /** Global dry run: decide and publish what would be done, change nothing. */
  DRY_RUN: z.stringbool().default(false),
  CHAT_PLATFORM: z.enum(['slack', 'dingtalk', 'feishu']).optional(),
  CHAT_WEBHOOK_URL: z.url().optional(),
  LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error']).default('info'),
});
export type FunctionsConfig = Readonly<z.infer<typeof FunctionsEnvSchema>>;

export class ConfigError extends Error {
  override name = 'ConfigError';
}

export function loadFunctionsConfig(env: NodeJS.ProcessEnv = process.env): FunctionsConfig {
  const r = FunctionsEnvSchema.safeParse(env);
  if (!r.success)
    throw new ConfigError(
      `bad configuration: ${r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    );
  const c = r.data;
  const sources = [
    c.KUBECONFIG,
    c.GPU_REFLEX_KUBECONFIG_TEXT,
    c.GPU_REFLEX_KUBECONFIG_PARAMETER,
    c.GPU_REFLEX_KUBECONFIG_ACK,
    c.GPU_REFLEX_KUBECONFIG_EKS,
    c.GPU_REFLEX_IN_CLUSTER || undefined,
  ].filter(Boolean).length;
  if (sources !== 1)
    throw new ConfigError(
      'bad configuration: set exactly one of KUBECONFIG, GPU_REFLEX_KUBECONFIG_TEXT, ' +
        'GPU_REFLEX_KUBECONFIG_PARAMETER, GPU_REFLEX_KUBECONFIG_ACK, GPU_REFLEX_KUBECONFIG_EKS, ' +
        'GPU_REFLEX_IN_CLUSTER=true',
    );
  if (c.GPU_REFLEX_KUBECONFIG_EKS && (!c.GPU_REFLEX_EKS_ENDPOINT || !c.GPU_REFLEX_EKS_CA_DATA))
    throw new ConfigError(
      `bad configuration: GPU_REFLEX_KUBECONFIG_EKS ` +
        'needs ' +
        [
          c.GPU_REFLEX_EKS_ENDPOINT ? '' : 'GPU_REFLEX_EKS_ENDPOINT',
          c.GPU_REFLEX_EKS_CA_DATA ? '' : 'GPU_REFLEX_EKS_CA_DATA',
        ]
          .filter(Boolean)
          .join(' and ') +
        ` (aws eks describe-cluster --name ${c.GPU_REFLEX_KUBECONFIG_EKS} ` +
        `--query 'cluster.[endpoint,certificateAuthority.data]')`,
    );
  if (c.CHAT_WEBHOOK_URL && !c.CHAT_PLATFORM)
    throw new ConfigError('bad configuration: CHAT_WEBHOOK_URL needs CHAT_PLATFORM (slack, dingtalk or feishu)');
  return Object.freeze(c);
}
