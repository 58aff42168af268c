/**
 * The functions' logger: structured JSON lines. It lives with the adapters (adapters/logger.ts),
 * which log through it too and import nothing of the kernel; the kernel and every reflex take it
 * from here.
 */
export * from '../adapters/logger.ts';
