import { describe, expect, it } from 'vitest';
import type { CliIo } from '../../events/cli-kit/command.ts';
import { main } from '../../bin/main.ts';

function capture(): CliIo & { lines: string[]; errors: string[] } {
  const lines: string[] = [];
  const errors: string[] = [];
  return { lines, errors, out: (l) => lines.push(l), err: (l) => errors.push(l) };
}

async function run(...args: string[]) {
  const io = capture();
  const code = await main(['xid', 'explain', ...args], io);
  return {
    code,
    out: io.lines.join('\n'),
    err: io.errors.join('\n'),
    json: () => JSON.parse(io.lines[0]!) as Record<string, unknown>,
  };
}

describe('gpu-reflex xid explain', () => {
  it("prints NVIDIA's words and gpu-reflex's action for a listed XID", async () => {
    const r = await run('79');
    expect(r.code).toBe(0);
    expect(r.out).toContain('XID 79  ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS');
    expect(r.out).toContain('NVIDIA: GPU has fallen off the bus');
    expect(r.out).toContain('immediate action: RESTART_BM');
    expect(r.out).toContain('gpu-reflex: drain-node → reboot-node → replace-node');
  });

  it('explains every code, listed or not, with exit 0', async () => {
    for (const x of ['1', '38', '78', '147', '167', '999', '4242']) expect((await run(x)).code, `XID ${x}`).toBe(0);
    expect((await run('4242')).out).toContain("(not in NVIDIA's catalog)");
    expect((await run('4242')).out).toContain('gpu-reflex: quarantine-gpu, a person is told');
    expect((await run('167')).out).toContain('immediate action: none given (NONE_GIVEN)');
  });

  it('decodes an NVLink5 sub-code and follows its row', async () => {
    const ber = await run('149', '--subcode', '0x00000013,0x00000000');
    expect(ber.out).toContain('sub-code: NETIR_BER_EVENT (intrinfo 0x00000013, errorStatus 0x00000000): IGNORE');
    expect(ber.out).toContain('gpu-reflex: observe');
    const down = await run('149', '--subcode', '0x01000011:0x0', '--json');
    expect(down.json()).toMatchObject({
      xid: 149,
      subcode: { intrinfo: 0x01000011, errorStatus: 0, verdict: 'reset' },
      gpuReflex: { action: 'quarantine-gpu' },
    });
    expect((await run('149', '--subcode', '7f 0')).out).toContain("not in NVIDIA's decode sheet");
  });

  it.each([
    [[], /give one XID number/],
    [['seventy-nine'], /XID must be a number, got "seventy-nine"/],
    [['79', '48'], /one XID at a time/],
    [['13', '--subcode', '0x1,0x2'], /--subcode is for the NVLink5 XIDs 144-150, not XID 13/],
    [['149', '--subcode', '0x13'], /--subcode: expected INTRINFO,ERRORSTATUS/],
    // The bad flag alone: not node's advice about positionals that start with '-' (cli-kit/flags.ts).
    [['79', '--verbose'], /Unknown option '--verbose'( \(see gpu-reflex xid explain --help\))?$/],
  ])('exits 2 on bad usage %j, one line naming the problem', async (args, message) => {
    const r = await run(...args);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(message);
    expect(r.err.split('\n')).toHaveLength(1);
  });

  it('has --help', async () => {
    const r = await run('--help');
    expect(r.code).toBe(0);
    expect(r.out).toContain('Usage: gpu-reflex xid explain XID [--subcode INTRINFO,ERRORSTATUS] [--json]');
  });
});
