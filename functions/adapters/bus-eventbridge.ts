/**
 * The bus over Amazon EventBridge: PutEvents through the AWS SDK, ten entries per call. Holds the
 * SDK client, so importing it evaluates @aws-sdk/client-eventbridge: the functions' wiring loads it
 * with `import()` at the first invocation (docs/deploy.md#bundles); the port is in bus.ts.
 */
import { EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import { checkPublished, type EventPublisher, type PublishedEvent } from './bus.ts';
import { TransientError } from './errors.ts';
import { withAwsTimeouts } from './aws-timeouts.ts';

export class EventBridgePublisher implements EventPublisher {
  constructor(
    private readonly busName: string,
    private readonly client = new EventBridgeClient(withAwsTimeouts({})),
  ) {}

  async publish(events: readonly PublishedEvent[]): Promise<void> {
    events.forEach(checkPublished);
    for (let i = 0; i < events.length; i += 10) {
      const batch = events.slice(i, i + 10);
      const out = await this.client
        .send(
          new PutEventsCommand({
            Entries: batch.map((e) => ({
              EventBusName: this.busName,
              Source: e.source,
              DetailType: e.detailType,
              Detail: JSON.stringify(e.detail),
              Resources: e.resources ?? [],
            })),
          }),
        )
        .catch((err: unknown) => {
          throw new TransientError('publishing events', { what: `bus ${this.busName}`, cause: err });
        });
      if (out.FailedEntryCount) {
        const codes = (out.Entries ?? []).flatMap((x) => (x.ErrorCode ? [x.ErrorCode] : []));
        throw new TransientError(
          `publishing events: ${out.FailedEntryCount} of ${batch.length} failed (${[...new Set(codes)].join(', ')})`,
          { what: `bus ${this.busName}` },
        );
      }
    }
  }
}
