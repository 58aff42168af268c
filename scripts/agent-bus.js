#!/usr/bin/env node
// Writes infra/k8s/agent-bus.env: the bus the node agents publish to and its region, for one stage
// (serverless.yml's bus is gpu-reflex-<stage>). Run it with the stage and region you deployed:
//   npm run agent-bus -- --stage prod --region ap-southeast-1
// then `kubectl apply -k infra/k8s` (docs/deploy.md#the-agents-bus).
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: { stage: { type: 'string' }, region: { type: 'string' }, out: { type: 'string' } },
  strict: true,
});
const bad = (what) => {
  process.stderr.write(`agent-bus: ${what} (usage: npm run agent-bus -- --stage STAGE --region REGION)\n`);
  process.exit(2);
};
if (!values.stage || !/^[a-zA-Z0-9-]+$/.test(values.stage))
  bad('--stage is required: letters, digits and dashes, as serverless deploy --stage took it');
if (!values.region || !/^[a-z]{2}(-[a-z]+)+-\d$/.test(values.region))
  bad('--region is required: an AWS region such as us-east-1');
const out = values.out ?? new URL('../infra/k8s/agent-bus.env', import.meta.url).pathname;
writeFileSync(out, `EVENT_BUS_NAME=gpu-reflex-${values.stage}\nAWS_REGION=${values.region}\n`);
process.stdout.write(`${out}: the agents publish to gpu-reflex-${values.stage} in ${values.region}\n`);
