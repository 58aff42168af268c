/**
 * Which bus the functions publish to: Alibaba Cloud EventBridge where ALIBABA_EVENTBRIDGE_ENDPOINT is
 * set (the Alibaba target, issue #35), else Amazon EventBridge. Each client is loaded with `import()`
 * at the first invocation, so a function bundle evaluates only the SDK of the cloud it runs on
 * (docs/deploy.md#bundles).
 */
import type { EventPublisher } from './bus.ts';

export async function busPublisher(
  config: { EVENT_BUS_NAME: string; ALIBABA_EVENTBRIDGE_ENDPOINT?: string | undefined },
  now: () => number,
  env: NodeJS.ProcessEnv = process.env,
): Promise<EventPublisher> {
  if (config.ALIBABA_EVENTBRIDGE_ENDPOINT) {
    const { AlibabaEventBridgePublisher } = await import('./bus-alibaba.ts');
    // Credentials: Alibaba's default chain (FC's role keys in ALIBABA_CLOUD_*, RRSA on ACK).
    return new AlibabaEventBridgePublisher(
      {
        endpoint: config.ALIBABA_EVENTBRIDGE_ENDPOINT,
        busName: config.EVENT_BUS_NAME,
        ...(env['ALIBABA_CLOUD_PROTOCOL'] === 'http' ? { protocol: 'http' as const } : {}),
      },
      now,
    );
  }
  const { EventBridgePublisher } = await import('./bus-eventbridge.ts');
  return new EventBridgePublisher(config.EVENT_BUS_NAME);
}
