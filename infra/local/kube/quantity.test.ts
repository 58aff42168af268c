import { describe, expect, it } from 'vitest';
import { formatQuantity, parseQuantity, quantityNanos, schedulerUnits } from './quantity.ts';

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

/** resource.Quantity's grammar and rounding (k8s.io/apimachinery/pkg/api/resource/quantity_test.go's kinds of cases). */
describe('the simulated API server reads quantities as resource.Quantity does', () => {
  it.each([
    ['1E', 1e18],
    ['1E3', 1000],
    ['1e-3', 0.001],
    ['100n', 1e-7],
    ['5u', 5e-6],
    ['+2', 2],
    ['-1', -1],
    ['.5', 0.5],
    ['5.', 5],
    ['1.5Ki', 1536],
    [' 2 ', 2],
  ])('parses %j', (text, value) => {
    expect(parseQuantity(text)).toBe(value);
  });

  it('rounds what is finer than a nano-unit up, as ParseQuantity does', () => {
    expect(quantityNanos('0.0000000001')).toBe(1n);
    expect(quantityNanos('0.1n')).toBe(1n);
  });

  it.each(['.', '1e', '1e3.5', 'Ki', '1KI', '1 Ki', '0x10', '1_000'])('refuses %j', (text) => {
    expect(quantityNanos(text)).toBeUndefined();
  });

  it.each([
    ['cpu', '0.0001', 1],
    ['cpu', '100m', 100],
    ['memory', '1.5', 2],
    ['nvidia.com/gpu', '1', 1],
  ])("reads %s %j in the scheduler's integers (MilliValue, Value: rounded up)", (resource, text, units) => {
    expect(schedulerUnits(resource, quantityNanos(text)!)).toBe(units);
  });
});
