import { describe, expect, it } from 'vitest';
import { UsageError } from '../../events/cli-kit/command.ts';
import { makeLocalCommand, makeSimulateCommand } from './cli.ts';

/** `--target` of `gpu-reflex local` and `simulate` (issue #35): explained, and anything unknown refused by name. */
describe('--target', () => {
  const io = { out: () => undefined, err: () => undefined };

  it.each([
    ['local', makeLocalCommand()],
    ['simulate', makeSimulateCommand()],
  ])('%s refuses an unknown target by name before anything starts', async (_, command) => {
    const run = command.run(['--target', 'gcp', '--scenario', '/nonexistent/scenario.yaml'], io);
    await expect(run).rejects.toThrow(UsageError);
    await expect(run).rejects.toThrow('--target gcp: unknown target (expected one of aws, alibaba)');
  });

  it.each([
    ['local', makeLocalCommand()],
    ['simulate', makeSimulateCommand()],
  ])("%s's help says what each target runs", (_, command) => {
    expect(command.help).toContain('[--target aws|alibaba]');
    expect(command.help).toMatch(/alibaba \(Function Compute 3\.0 and\s+Alibaba EventBridge/);
    expect(command.help).toContain('Same scenario, same expectations');
  });
});
