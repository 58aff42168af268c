/**
 * The Alibaba target's ROS template (issue #35), made offline from the same sources as the AWS
 * stack: serverless.yml's functions (timeouts, memory, retries, schedules, the chat route) and
 * events/patterns/ (translated to Alibaba's syntax by events/alibaba-pattern.ts). Written with
 * Alibaba's ROS CDK (`@alicloud/ros-cdk-*`), whose typed properties and synth-time validators stand
 * in for ROS's online `ValidateTemplate`.
 *
 * What it declares (ROS resource types: https://help.aliyun.com/zh/ros/developer-reference/aliyun-fc3-function
 * and its siblings; `@alicloud/ros-cdk-fc3` 1.11, `-eventbridge` 1.15, `-ram` 1.12):
 * - per function an `ALIYUN::FC3::Function` on `nodejs20` (FC 3.0 has no nodejs22), its code from
 *   OSS (`<CodePrefix>/<function>.zip`, what `npm run package -- --target alibaba` writes), bound to
 *   the cluster's VPC so it reaches the ACK API server privately; an `ALIYUN::FC3::AsyncInvokeConfig`
 *   carrying serverless.yml's retries and event age;
 * - per function an `ALIYUN::RAM::Role` FC assumes (`fc.aliyuncs.com`), least privilege: PutEvents
 *   on the bus, the cluster's kubeconfig, and the ACK/ECS actions of infra/alicloud/ram-policy.json
 *   only for the functions that reach Alibaba's APIs (those serverless.yml gives
 *   ALIBABA_CLOUD_ACCESS_KEY_PARAMETER);
 * - `schedule: rate(N minutes)` → an FC timer trigger `@every Nm`; `httpApi` → an FC HTTP trigger
 *   (anonymous: chat's webhook checks each platform's signature itself);
 * - each `eventBridge` pattern → one `ALIYUN::EventBridge::Rule` per branch on the custom bus, its
 *   target the function (`acs.fc.function`). FC's own EventBridge trigger cannot listen to a custom
 *   bus (`eventSourceType`: Default, MNS, RocketMQ, RabbitMQ, Kafka, MQTT, DTS —
 *   @alicloud/fc20230330 EventSourceConfig), so the rules are the bus's.
 * - per function its rules invoke, a dead-letter queue (`ALIYUN::MNS::Queue`) that its rule targets
 *   (DeadLetterQueue, ErrorsTolerance ALL) and its async config (OnFailure) both end in;
 * The custom bus itself has no ROS resource type: docs/deploy-alibaba.md creates it first.
 */
import * as ros from '@alicloud/ros-cdk-core';
import * as eventbridge from '@alicloud/ros-cdk-eventbridge';
import * as fc3 from '@alicloud/ros-cdk-fc3';
import * as ram from '@alicloud/ros-cdk-ram';
import * as sls from '@alicloud/ros-cdk-sls';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { toAlibabaPatterns } from '../../events/alibaba-pattern.ts';
import { oosParameters, type AlibabaTemplateInput } from './ros-input.ts';
import { deadLetterQueue, FC_TIMEOUT, fcEvery, httpMethods, LOG_DAYS, patternFile, resourceId } from './ros-parts.ts';

export {
  alibabaTemplateInput,
  oosParameters,
  type AlibabaTemplateInput,
  type ServerlessFunction,
} from './ros-input.ts';
export { DLQ_RETENTION_SECONDS, fcEvery, httpMethods, LOG_DAYS } from './ros-parts.ts';

/** FC 3.0's runtime for Node (no nodejs22: https://www.alibabacloud.com/help/en/functioncompute/fc/node-js). */
export const FC_RUNTIME = 'nodejs20';
/** ROS's template size limit (https://www.alibabacloud.com/help/doc-detail/28930.htm). */
export const ROS_TEMPLATE_MAX_BYTES = 512 * 1024;
/** The ROS template, as ROS takes it (plain JSON). */
export function alibabaTemplate(input: AlibabaTemplateInput): Record<string, unknown> {
  const outdir = mkdtempSync(join(tmpdir(), 'gpu-reflex-ros-'));
  try {
    const app = new ros.App({ outdir });
    const stack = new ros.Stack(app, `gpu-reflex-${input.stage}`, {
      description: `gpu-reflex (${input.stage}) on Function Compute 3.0 and EventBridge: docs/deploy-alibaba.md`,
    });
    const param = (id: string, description: string, extra: Partial<ros.RosParameterProps> = {}) =>
      new ros.RosParameter(stack, id, { type: ros.RosParameterType.STRING, description, ...extra });
    const codeBucket = param('CodeBucket', 'The OSS bucket holding the function packages (same region).');
    // Named in each function's Code by Fn::Sub.
    param('CodePrefix', 'The folder in CodeBucket the packages were uploaded to.', {
      defaultValue: `gpu-reflex/${input.stage}`,
    });
    const busName = param('EventBusName', 'The custom event bus (created beforehand: docs/deploy-alibaba.md).', {
      defaultValue: `gpu-reflex-${input.stage}`,
    });
    const clusterId = param('AckClusterId', 'The ACK cluster gpu-reflex looks after.');
    const vpcId = param('VpcId', "The cluster's VPC.");
    const vSwitchId = param('VSwitchId', 'A vSwitch of that VPC for the functions.');
    const securityGroupId = param('SecurityGroupId', "A security group allowed to reach the cluster's API server.");

    const region = ros.Fn.ref('ALIYUN::Region');
    // The functions' logs: one SLS project (its name unique per account and stage) and logstore, 30
    // days kept; FC writes there with each function's role (log:PostLogStoreLogs on it).
    const logProject = new sls.RosProject(
      stack,
      'LogProject',
      {
        name: ros.Fn.sub(`gpu-reflex-${input.stage}-\${ALIYUN::TenantId}`),
        description: `gpu-reflex (${input.stage}) function logs`,
      },
      true,
    );
    const logstore = new sls.RosLogstore(
      stack,
      'FunctionLogs',
      { projectName: logProject.attrName, logstoreName: 'functions', ttl: LOG_DAYS },
      true,
    );
    const logstoreArn = ros.Fn.sub(
      `acs:log:\${ALIYUN::Region}:\${ALIYUN::TenantId}:project/gpu-reflex-${input.stage}-` +
        '${ALIYUN::TenantId}/logstore/functions',
    );
    const busArn = ros.Fn.sub('acs:eventbridge:${ALIYUN::Region}:${ALIYUN::TenantId}:eventbus/${EventBusName}');

    for (const [name, f] of Object.entries(input.functions)) {
      const functionName = `gpu-reflex-${input.stage}-${name}`;
      // Dead letters (serverless.yml's <Name>Dlq on AWS): a function its rules invoke gets an SMQ (MNS) queue
      // that both failure paths end in. A function only timers invoke has none: FC sends no timer-invoked
      // failure to a destination (https://www.alibabacloud.com/help/doc-detail/181866.htm), and the next
      // tick is the retry.
      const ruled = (f.events ?? []).some((e) => e['eventBridge'] !== undefined);
      const dlq = ruled ? deadLetterQueue(stack, name, `${functionName}-dlq`) : undefined;
      const reachesCloud = Object.hasOwn(f.environment ?? {}, 'ALIBABA_CLOUD_ACCESS_KEY_PARAMETER');
      const params = oosParameters(input, f);
      const plain = params.filter((p) => !p.secret);
      const secrets = params.filter((p) => p.secret);
      const oosArn = (kind: string, n: string) =>
        ros.Fn.sub(`acs:oos:\${ALIYUN::Region}:\${ALIYUN::TenantId}:${kind}/${n}`);
      const role = new ram.RosRole(
        stack,
        resourceId(name, 'Role'),
        {
          roleName: functionName,
          description: `gpu-reflex ${name}: what its adapters call, nothing more`,
          assumeRolePolicyDocument: {
            version: '1',
            statement: [{ action: 'sts:AssumeRole', effect: 'Allow', principal: { service: ['fc.aliyuncs.com'] } }],
          },
          policies: [
            {
              policyName: `${functionName}-calls`,
              policyDocument: {
                version: '1',
                statement: [
                  { effect: 'Allow', action: ['eventbridge:PutEvents'], resource: [busArn] },
                  { effect: 'Allow', action: ['log:PostLogStoreLogs'], resource: [logstoreArn] },
                  // FC's failure destination sends with the function's role (mns:SendMessage, "Destinations for
                  // asynchronous invocations": https://www.alibabacloud.com/help/en/fc/user-guide/result-callback).
                  ...(dlq ? [{ effect: 'Allow', action: ['mns:SendMessage'], resource: [dlq.messagesArn] }] : []),
                  {
                    effect: 'Allow',
                    action: ['cs:DescribeClusterUserKubeconfig'],
                    resource: [ros.Fn.sub('acs:cs:*:*:cluster/${AckClusterId}')],
                  },
                  ...(reachesCloud ? [{ effect: 'Allow', action: input.cloudActions, resource: ['*'] }] : []),
                  // Its own parameters only (OOS: oos:GetParameter on parameter/<name>, oos:GetSecretParameter
                  // on secretparameter/<name> with kms:GetSecretValue behind it).
                  ...(plain.length
                    ? [
                        {
                          effect: 'Allow',
                          action: ['oos:GetParameter'],
                          resource: plain.map((p) => oosArn('parameter', p.name)),
                        },
                      ]
                    : []),
                  ...(secrets.length
                    ? [
                        {
                          effect: 'Allow',
                          action: ['oos:GetSecretParameter'],
                          resource: secrets.map((p) => oosArn('secretparameter', p.name)),
                        },
                        { effect: 'Allow', action: ['kms:GetSecretValue'], resource: ['*'] },
                      ]
                    : []),
                ],
              },
            },
          ],
        },
        true,
      );
      const timeout = f.timeout ?? input.defaults.timeout;
      if (timeout < FC_TIMEOUT.min || timeout > FC_TIMEOUT.max)
        throw new Error(`${name}: timeout ${timeout} s is outside FC 3.0's ${FC_TIMEOUT.min}–${FC_TIMEOUT.max} s`);
      const fn = new fc3.RosFunction(
        stack,
        resourceId(name, 'Function'),
        {
          functionName,
          description: `gpu-reflex ${name} (${f.handler})`,
          runtime: FC_RUNTIME,
          handler: 'index.handler',
          code: { ossBucketName: codeBucket.valueAsString, ossObjectName: ros.Fn.sub(`\${CodePrefix}/${name}.zip`) },
          memorySize: f.memorySize ?? input.defaults.memorySize,
          timeout,
          role: role.attrArn,
          logConfig: {
            project: logstore.attrProjectName,
            logstore: logstore.attrLogstoreName,
            enableRequestMetrics: true,
            enableInstanceMetrics: true,
          },
          vpcConfig: {
            vpcId: vpcId.valueAsString,
            vSwitchIds: [vSwitchId.valueAsString],
            securityGroupId: securityGroupId.valueAsString,
          },
          environmentVariables: {
            EVENT_BUS_NAME: busName.valueAsString,
            ALIBABA_EVENTBRIDGE_ENDPOINT: ros.Fn.sub('${ALIYUN::TenantId}.eventbridge.${ALIYUN::Region}.aliyuncs.com'),
            ALIBABA_CLOUD_REGION_ID: region,
            ACK_CLUSTER_ID: clusterId.valueAsString,
            // The kubeconfig from ACK's DescribeClusterUserKubeconfig, the API server's VPC endpoint.
            GPU_REFLEX_KUBECONFIG_ACK: 'private',
            ...Object.fromEntries(params.map((p) => [p.variable, p.ref])),
          },
        },
        true,
      );
      const asyncConfig = new fc3.RosAsyncInvokeConfig(
        stack,
        resourceId(name, 'AsyncConfig'),
        {
          functionName: fn.attrFunctionName,
          maxAsyncRetryAttempts: f.maximumRetryAttempts ?? 2,
          maxAsyncEventAgeInSeconds: f.maximumEventAge ?? 21_600,
          // A handler still throwing after its retries (serverless.yml's destinations.onFailure).
          ...(dlq ? { destinationConfig: { onFailure: { destination: dlq.messagesArn } } } : {}),
        },
        true,
      );
      if (dlq) asyncConfig.addRosDependency(dlq.id);
      let rules = 0;
      for (const [i, event] of (f.events ?? []).entries()) {
        if (typeof event['schedule'] === 'string') {
          new fc3.RosTrigger(
            stack,
            resourceId(name, `Timer${i}`),
            {
              functionName: fn.attrFunctionName,
              triggerName: `${name}-timer-${i}`,
              triggerType: 'timer',
              triggerConfig: { cronExpression: fcEvery(event['schedule']), enable: true, payload: '' },
            },
            true,
          );
        } else if (event['httpApi'] !== undefined) {
          new fc3.RosTrigger(
            stack,
            resourceId(name, `Http${i}`),
            {
              functionName: fn.attrFunctionName,
              triggerName: `${name}-http`,
              triggerType: 'http',
              triggerConfig: { authType: 'anonymous', methods: httpMethods(event['httpApi']) },
            },
            true,
          );
        } else if (event['eventBridge'] !== undefined) {
          const file = patternFile((event['eventBridge'] as Record<string, unknown>)['pattern']);
          const aws = input.patterns[file];
          if (aws === undefined) throw new Error(`${name}: pattern file ${file} was not given`);
          for (const pattern of toAlibabaPatterns(aws)) {
            const rule = new eventbridge.RosRule(
              stack,
              resourceId(name, `Rule${rules}`),
              {
                eventBusName: busName.valueAsString,
                ruleName: `${functionName}-${rules}`,
                description: `${file} (branch ${rules}) → ${name}`,
                status: 'ENABLE',
                filterPattern: pattern,
                targets: [
                  {
                    identity: `${name}-${rules}`,
                    type: 'acs.fc.function',
                    endpoint: ros.Fn.sub(`acs:fc:\${ALIYUN::Region}:\${ALIYUN::TenantId}:functions/${functionName}`),
                    // FC target parameters (EventBridge "Event target parameters"; keys unconfirmed for
                    // FC 3.0, docs/deploy-alibaba.md): the whole CloudEvent as the body, asynchronously.
                    paramList: [
                      { resourceKey: 'functionName', form: 'CONSTANT', value: functionName },
                      { resourceKey: 'qualifier', form: 'CONSTANT', value: 'LATEST' },
                      { resourceKey: 'Body', form: 'ORIGINAL', value: '' },
                      { resourceKey: 'InvocationType', form: 'CONSTANT', value: 'Async' },
                    ],
                    // Delivery to FC failing (serverless.yml's retryPolicy and deadLetterQueueArn): 3 tries 10–20 s
                    // apart (AWS: 8 within the hour; Alibaba's other strategy retries for a day, past what a
                    // GPU event is worth), then, with ErrorsTolerance ALL, the dead-letter queue rather than a
                    // blocked rule (EventBridge "Retry policies and dead-letter queues":
                    // https://www.alibabacloud.com/help/en/eventbridge/user-guide/retry-and-dead-letter; the
                    // queue's ARN form: deadLetterQueue above).
                    pushRetryStrategy: 'BACKOFF_RETRY',
                    errorsTolerance: 'ALL',
                    deadLetterQueue: { arn: dlq!.arn },
                  },
                ],
              },
              true,
            );
            rule.addRosDependency(dlq!.id);
            rules++;
          }
        } else {
          throw new Error(`${name}: event ${Object.keys(event).join(', ')} has no Alibaba form yet`);
        }
      }
    }
    const assembly = app.synth();
    return assembly.getStackByName(stack.stackName).template as Record<string, unknown>;
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
}
