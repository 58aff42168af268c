// Child of `bench deploy`: one cold start in this fresh process. Imports the module (module
// initialisation), then handles one event with it (the first invocation: the wiring, the modules
// it loads with import(), the calls to the local stack), and prints both times in milliseconds and
// the handler's answer as one JSON line. For the bare client (`@aws-sdk/client-eventbridge`) the
// "invocation" is one PutEvents of the event: the least a function that publishes must do.
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';

const [spec, eventFile] = process.argv.slice(2);
const event = JSON.parse(readFileSync(eventFile, 'utf8'));
const t0 = performance.now();
const mod = await import(spec);
const t1 = performance.now();
const outcome =
  spec === '@aws-sdk/client-eventbridge'
    ? await new mod.EventBridgeClient({})
        .send(
          new mod.PutEventsCommand({
            Entries: [
              {
                EventBusName: 'gpu-reflex',
                Source: event.source,
                DetailType: event['detail-type'],
                Detail: JSON.stringify(event.detail),
              },
            ],
          }),
        )
        .then((o) => ({ FailedEntryCount: o.FailedEntryCount }))
    : await mod.handler(event, {
        awsRequestId: 'bench-cold-start',
        functionName: 'bench',
        getRemainingTimeInMillis: () => 60_000,
      });
const t2 = performance.now();
process.stdout.write(`${JSON.stringify({ initMs: t1 - t0, firstMs: t2 - t1, outcome })}\n`);
