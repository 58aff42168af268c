import { describe, expect, it } from 'vitest';
import { formatQuantity, parseQuantity } from './quantity.ts';

describe('quantities', () => {
  it.each([
    ['500m', 0.5],
    ['2', 2],
    ['1.5', 1.5],
    ['16Gi', 16 * 2 ** 30],
    ['128Mi', 128 * 2 ** 20],
    ['1k', 1000],
    ['1e3', 1000],
    ['10G', 1e10],
    [8, 8],
  ])('parses %s', (text, value) => {
    expect(parseQuantity(text)).toBe(value);
  });

  it.each(['lots', '1.2.3', '5 Gi', ''])('refuses %j', (text) => {
    expect(() => parseQuantity(text)).toThrow(/quantities must match/);
  });

  it.each([
    [0.25, 'requests.cpu', '250m'],
    [3, 'requests.nvidia.com/gpu', '3'],
    [2 * 2 ** 30, 'limits.memory', '2Gi'],
    [1536 * 2 ** 20, 'requests.memory', '1536Mi'],
    [0, 'requests.memory', '0'],
  ])('formats %s for %s as %s', (n, resource, text) => {
    expect(formatQuantity(n, resource)).toBe(text);
  });
});
