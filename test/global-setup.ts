import { buildMockNvml } from '../infra/local/mock-nvml/build.ts';

/**
 * Runs once before the suite. Native fixtures that tests need (the mock NVML library) are built
 * here into the git-ignored `.build/` folder, so a fresh clone needs nothing but `npm ci`.
 */
export default async function setup(): Promise<void> {
  await buildMockNvml();
}
