import { randomBytes } from 'node:crypto';
import { alibabaTemplate, alibabaTemplateInput } from '../alicloud/ros-template.ts';
import { fcEntry } from '../../functions/lib/fc-entry.ts';
import { startAlibabaLocalBus, type AlibabaLocalBus } from './bus/alibaba-bus.ts';
import type { LambdaHandler } from './bus/handler-loader.ts';
import type { Clock } from './bus/clock.ts';
import { REPO_ROOT } from './stack-env.ts';

/**
 * The embedded stack's deploy targets (`gpu-reflex local --target`): `aws`, the local EventBridge
 * reading serverless.yml; `alibaba` (issue #35), the same functions as Alibaba Cloud would run them
 * from the ROS template `npm run package -- --target alibaba` writes — Alibaba EventBridge's data
 * plane, the template's rules in Alibaba's pattern syntax, Function Compute 3.0's event, timer and
 * HTTP triggers through the packages' FC entry (functions/lib/fc-entry.ts).
 */
export const STACK_TARGETS = ['aws', 'alibaba'] as const;
export type StackTarget = (typeof STACK_TARGETS)[number];

export interface AlibabaTarget {
  bus: AlibabaLocalBus;
  /** The functions' environment: Alibaba's data-plane endpoint and their identity's keys. */
  env: Record<string, string>;
  /** What the node agents publish with (their RRSA identity on ACK; keys here). */
  agents: { endpoint: string; accessKeyId: string; accessKeySecret: string };
  /** Accepts another AccessKey (the simulated cloud's: one identity for every Alibaba service). */
  trust(accessKeyId: string, secret: string): void;
  summary: string;
}

export async function startAlibabaTarget(o: {
  clock: Clock;
  busName: string;
  serverlessYml: string;
  dlqPath: string;
  historySize?: number;
}): Promise<AlibabaTarget> {
  // The deployable as `npm run package -- --target alibaba` writes it, stage dev (the bus gpu-reflex-dev).
  const template = alibabaTemplate(alibabaTemplateInput(REPO_ROOT, 'dev'));
  const accessKeyId = `LTAI${randomBytes(8).toString('hex')}`;
  const accessKeySecret = randomBytes(24).toString('base64url');
  const accessKeys: Record<string, string> = { [accessKeyId]: accessKeySecret };
  const bus = await startAlibabaLocalBus({
    template,
    parameters: { EventBusName: o.busName },
    serverlessYml: o.serverlessYml,
    entry: (h) => fcEntry(h as never) as unknown as LambdaHandler,
    accessKeys,
    clock: o.clock,
    dlqPath: o.dlqPath,
    ...(o.historySize !== undefined ? { historySize: o.historySize } : {}),
  });
  const resources = Object.values((template['Resources'] ?? {}) as Record<string, { Type?: string }>);
  const count = (type: string) => resources.filter((r) => r.Type === type).length;
  return {
    bus,
    env: {
      ALIBABA_EVENTBRIDGE_ENDPOINT: bus.endpoint,
      ALIBABA_CLOUD_PROTOCOL: 'http',
      ALIBABA_CLOUD_ACCESS_KEY_ID: accessKeyId,
      ALIBABA_CLOUD_ACCESS_KEY_SECRET: accessKeySecret,
    },
    agents: { endpoint: bus.endpoint, accessKeyId, accessKeySecret },
    trust: (id, secret) => void (accessKeys[id] = secret),
    summary:
      `Alibaba EventBridge data plane at ${bus.endpoint} (ACS signatures checked), the ROS template's ` +
      `${count('ALIYUN::FC3::Function')} FC 3.0 functions, ${count('ALIYUN::EventBridge::Rule')} rules in ` +
      `Alibaba's pattern syntax, ${count('ALIYUN::FC3::Trigger')} timer and HTTP triggers`,
  };
}
