import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

/**
 * Builds the mock NVML library (docs/mock-nvml.md) into the git-ignored
 * `.build/mock-nvml/libnvidia-ml.so.1`. Skips the compiler when a stamp beside the library holds
 * the hash of the same sources and flags, so repeated `npm test` runs cost a few file reads.
 */

const here = dirname(fileURLToPath(import.meta.url));
const repoRoot = join(here, '..', '..', '..');
export const MOCK_NVML_DIR = join(repoRoot, '.build', 'mock-nvml');
export const MOCK_NVML_LIBRARY = join(MOCK_NVML_DIR, 'libnvidia-ml.so.1');
export const MOCK_NVML_SCENARIOS = join(here, 'scenarios');

const FLAGS = ['-shared', '-fPIC', '-O2', '-std=c11', '-D_GNU_SOURCE', '-Wall', '-Wextra', '-fvisibility=hidden'];

async function sourceHash(files: string[]): Promise<string> {
  const hash = createHash('sha256').update(FLAGS.join(' '));
  for (const file of files) hash.update(file).update(await readFile(join(here, 'src', file)));
  return hash.digest('hex');
}

/** Returns the library path; compiles with `cc` (or $CC) only when the sources changed. */
export async function buildMockNvml(): Promise<string> {
  const files = (await readdir(join(here, 'src'))).filter((f) => f.endsWith('.c') || f.endsWith('.h')).sort();
  const hash = await sourceHash(files);
  const stamp = join(MOCK_NVML_DIR, 'stamp');
  const previous = await readFile(stamp, 'utf8').catch(() => '');
  const built = await readFile(MOCK_NVML_LIBRARY).then(
    () => true,
    () => false,
  );
  if (built && previous === hash) return MOCK_NVML_LIBRARY;

  await mkdir(MOCK_NVML_DIR, { recursive: true });
  // Build beside, then rename: a process that already loaded the old file keeps its copy intact.
  const tmp = `${MOCK_NVML_LIBRARY}.${process.pid}.tmp`;
  const sources = files.filter((f) => f.endsWith('.c')).map((f) => join(here, 'src', f));
  try {
    await promisify(execFile)(process.env.CC ?? 'cc', [...FLAGS, '-o', tmp, ...sources, '-lpthread']);
  } catch (err) {
    const compiler = process.env.CC ?? 'cc';
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new Error(
        `building the mock NVML library: no C compiler "${compiler}" on PATH (install gcc, or set CC); the agent and ` +
          `NVML tests need it`,
        { cause: err },
      );
    }
    const stderr = (err as { stderr?: string }).stderr ?? '';
    throw new Error(`building the mock NVML library failed (cc ${FLAGS.join(' ')}):\n${stderr}`, { cause: err });
  }
  await rename(tmp, MOCK_NVML_LIBRARY);
  await writeFile(stamp, hash);
  return MOCK_NVML_LIBRARY;
}
