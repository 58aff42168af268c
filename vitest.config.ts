import { defineConfig } from 'vitest/config';

// Tests never sleep: clocks are injected and servers listen on port 0 (the OS picks).
export default defineConfig({
  test: {
    include: ['**/*.test.ts'],
    exclude: ['node_modules/**', '.build/**', 'dist/**'],
    globalSetup: ['test/global-setup.ts'],
    // A test skipped because a tool is missing is named in a loud block below the summary (test/tools.ts).
    reporters: ['default', './test/not-run-reporter.ts'],
    testTimeout: 20_000,
    hookTimeout: 30_000,
  },
});
