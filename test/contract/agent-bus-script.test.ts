/** scripts/agent-bus.js writes the one file the agents' bus and region come from (infra/k8s/agent-bus.env). */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const SCRIPT = new URL('../../scripts/agent-bus.js', import.meta.url).pathname;
const run = (args: string[]) =>
  promisify(execFile)(process.execPath, [SCRIPT, ...args]).then(
    (r) => ({ code: 0, ...r }),
    (e: { code: number; stdout: string; stderr: string }) => e,
  );

describe('npm run agent-bus', () => {
  it("writes the stage's bus and the region, as serverless.yml names the bus", async () => {
    const out = join(mkdtempSync(join(tmpdir(), 'agent-bus-')), 'agent-bus.env');
    expect(await run(['--stage', 'prod', '--region', 'ap-southeast-1', '--out', out])).toMatchObject({ code: 0 });
    expect(readFileSync(out, 'utf8')).toBe('EVENT_BUS_NAME=gpu-reflex-prod\nAWS_REGION=ap-southeast-1\n');
  });

  it('refuses a missing stage or a malformed region in one line, exit 2, writing nothing', async () => {
    expect(await run(['--region', 'us-east-1', '--out', '/nonexistent/x'])).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/^agent-bus: --stage is required/),
    });
    expect(await run(['--stage', 'prod', '--region', 'useast', '--out', '/nonexistent/x'])).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/^agent-bus: --region is required: an AWS region/),
    });
  });
});
