import { describe, expect, it } from 'vitest';
import { runStockTrial, stockTrials } from './autoscale-stockout.ts';

describe('bench autoscale: stock-out trials', () => {
  it('are seeded: the same fleets every run', () => {
    expect(stockTrials(5)).toEqual(stockTrials(5));
  });

  it('a fleet whose first type is sold out: the multi-type pool runs every pod, its first type alone does not', async () => {
    const t = {
      stock: {
        'ecs.gn6i-c4g1.xlarge': 0,
        'ecs.gn7i-c8g1.2xlarge': 2,
        'ecs.gn6v-c8g1.2xlarge': 0,
        'ecs.gn7e-c16g1.4xlarge': 0,
      },
      pods: 2,
    };
    expect(await runStockTrial(t, false)).toBe(true);
    expect(await runStockTrial(t, true)).toBe(false);
  }, 60_000);
});
