import { defineConfig } from 'vitest/config';

// Tests never sleep: clocks are injected and servers listen on port 0 (the OS picks).
export default defineConfig({
  test: {
    include: ['**/*.test.ts'],
    exclude: ['node_modules/**', '.build/**', 'dist/**'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 20_000,
    hookTimeout: 30_000,
  },
});
