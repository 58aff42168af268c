import { describe, expect, it } from 'vitest';
import { UsageError } from '../events/cli-kit/command.ts';
import { benchCommand } from './cli.ts';

describe('gpu-reflex bench usage', () => {
  // Refused before any suite runs: a test that got past the parse would run minutes of benchmarks.
  it.each([
    ['an unknown option', ['agent', '--bogus']],
    ['--record without its value', ['agent', '--record']],
  ])('refuses %s as a UsageError, not a raw TypeError', async (_, args) => {
    await expect(benchCommand.run(args, { out: () => {}, err: () => {} })).rejects.toThrow(UsageError);
  });
});
