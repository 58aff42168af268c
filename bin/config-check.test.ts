import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { UsageError, type CliIo } from '../events/cli-kit/command.ts';
import { configCheckCommand } from './config-check.ts';

function capture(): CliIo & { lines: string[]; errors: string[] } {
  const lines: string[] = [];
  const errors: string[] = [];
  return { lines, errors, out: (l) => lines.push(l), err: (l) => errors.push(l) };
}

describe('gpu-reflex config check', () => {
  it('accepts every example policy under examples/ (each one a policy a function reads)', async () => {
    const io = capture();
    expect(await configCheckCommand.run(['examples'], io)).toBe(0);
    expect(io.errors).toEqual([]);
    expect(io.lines.at(-1)).toBe('7 of 7 accepted');
    for (const kind of [
      'remediation-policy',
      'mig-policy',
      'autoscale-policy',
      'quota-config',
      'labeler-config',
      'chatops-config',
      'idle-policy',
    ])
      expect(io.lines).toContain(`examples/${kind}.yaml: ok (${kind})`);
  });

  it('refuses a bad field with the file and the field named, and exits 1', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'config-check-'));
    writeFileSync(join(dir, 'mig-policy.yaml'), 'preemption:\n  minPriorityGap: 0\n');
    writeFileSync(join(dir, 'remediation-policy.yaml'), 'xids:\n  79: { action: explode }\n');
    writeFileSync(join(dir, 'quota-config.yaml'), readFileSync('examples/quota-config.yaml', 'utf8'));
    const io = capture();
    expect(await configCheckCommand.run([dir], io)).toBe(1);
    expect(io.errors.join('\n')).toMatch(/mig-policy\.yaml[\s\S]*preemption\.minPriorityGap: Too small/);
    expect(io.errors.join('\n')).toMatch(/remediation-policy\.yaml:2.*xids\.79\.action/);
    expect(io.lines).toContain(`${join(dir, 'quota-config.yaml')}: ok (quota-config)`);
    expect(io.lines.at(-1)).toBe('1 of 3 accepted');
  });

  it('asks which policy a file is when its name does not say, and takes --kind for one file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'config-check-'));
    const file = join(dir, 'prod.yaml');
    writeFileSync(file, 'preemption: { enabled: true }\n');
    const io = capture();
    expect(await configCheckCommand.run([file], io)).toBe(1);
    expect(io.errors[0]).toMatch(/which policy is it\? name it after its parameter .*mig-policy.* or pass --kind/);
    const again = capture();
    expect(await configCheckCommand.run([file, '--kind', 'mig-policy'], again)).toBe(0);
    await expect(configCheckCommand.run([file, '--kind', 'gpu-policy'], capture())).rejects.toThrow(
      /--kind gpu-policy: not a policy/,
    );
    await expect(configCheckCommand.run([join(dir, 'nope')], capture())).rejects.toThrow(/no such file or directory/);
  });

  it.each([
    ['examples/', '--bogus'],
    ['examples/mig-policy.yaml', '--kind'],
  ])('refuses %s %s as a UsageError, not a raw TypeError', async (...args) => {
    await expect(configCheckCommand.run(args, capture())).rejects.toThrow(UsageError);
  });
});
