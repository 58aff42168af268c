import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { alibabaPatternMatches } from './alibaba-pattern.ts';

interface Case {
  id: string;
  pattern: Record<string, unknown>;
  match: unknown;
  miss: unknown;
}

const cases = JSON.parse(
  readFileSync(new URL('../../../test/data/alibaba-eventbridge/patterns.json', import.meta.url), 'utf8'),
) as Case[];

describe("the simulated Alibaba EventBridge's pattern matching, on Alibaba's documented examples", () => {
  it.each(cases.map((c) => [c.id, c] as const))('%s: matches its event and not the other', (_id, c) => {
    expect(alibabaPatternMatches(c.pattern, c.match)).toBe(true);
    expect(alibabaPatternMatches(c.pattern, c.miss)).toBe(false);
  });

  it('matches an array in the event when any element does', () => {
    expect(alibabaPatternMatches({ data: { tags: ['gpu'] } }, { data: { tags: ['cpu', 'gpu'] } })).toBe(true);
    expect(alibabaPatternMatches({ data: { tags: ['gpu'] } }, { data: { tags: ['cpu'] } })).toBe(false);
  });
});
