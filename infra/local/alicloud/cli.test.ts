import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../../events/cli-kit/command.ts';
import { main } from '../../../bin/main.ts';
import { makeAliCloudServeCommand } from './cli.ts';
import type { AliCloudSim } from './index.ts';

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (l: string) => void out.push(l), err: (l: string) => void err.push(l) }, out, err };
}

describe('gpu-reflex alicloud serve', () => {
  it('serves the example cloud, writes the connection file and stops when told', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'alicloud-cli-'));
    const outFile = join(dir, 'alicloud.json');
    let stop!: () => void;
    let ready!: (sim: AliCloudSim) => void;
    const started = new Promise<AliCloudSim>((r) => (ready = r));
    const { io, out } = capture();
    const running = makeAliCloudServeCommand({
      stop: new Promise<void>((r) => (stop = r)),
      onReady: (s) => ready(s),
    }).run(['--out', outFile], io);
    const sim = await started;
    const conn = JSON.parse(readFileSync(outFile, 'utf8')) as Record<string, string>;
    expect(conn).toEqual({
      endpoint: sim.endpoint,
      regionId: 'cn-hangzhou',
      accessKeyId: 'LTAI5tLocalGpuReflex',
      accessKeySecret: 'local-simulator-secret',
      clusterId: 'c0gpureflexlocal',
    });
    expect(out[0]).toBe(
      `Alibaba Cloud simulator listening on ${sim.url} (region cn-hangzhou, cluster c0gpureflexlocal)`,
    );
    expect(out[1]).toContain('np-t4-inference (2 × ecs.gn6i-c4g1.xlarge)');
    // Unsigned: refused by the gateway check.
    const res = await fetch(`${sim.url}/clusters/c0gpureflexlocal/nodepools`, {
      headers: { 'x-acs-action': 'DescribeClusterNodePools', 'x-acs-version': '2015-12-15' },
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { Code: string }).Code).toBe('MissingAccessKeyId');
    stop();
    expect(await running).toBe(0);
    await expect(fetch(sim.url)).rejects.toThrow();
  });

  it('names the bad field of a cloud file and exits 1', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'alicloud-cli-'));
    const file = join(dir, 'cloud.yaml');
    writeFileSync(file, 'pools:\n  - id: gpu\n    name: g\n    instanceTypes: [ecs.gn6i-c4g1.xlarge]\n');
    const { io, err } = capture();
    expect(await main(['alicloud', 'serve', '--fleet', file], io)).toBe(1);
    expect(err.join('\n')).toContain('pools.0.id: must start with "np"');
    writeFileSync(file, 'pools:\n  - id: np-x\n    name: g\n    instanceTypes: [ecs.gn9-nope.xlarge]\n');
    const second = capture();
    expect(await main(['alicloud', 'serve', '--fleet', file], second.io)).toBe(1);
    expect(second.err.join('\n')).toContain('node pool np-x: unknown instance type ecs.gn9-nope.xlarge');
  });

  it.each([[['--port', 'x']], [['--bogus']]])('rejects bad usage %j', async (args) => {
    await expect(makeAliCloudServeCommand({ stop: Promise.resolve() }).run(args, capture().io)).rejects.toBeInstanceOf(
      UsageError,
    );
  });
});
