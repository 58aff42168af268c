// Child of `bench deploy`: imports one module in this fresh process and prints how long the import
// took (module initialisation: parse, evaluate, every static import), in milliseconds.
import { performance } from 'node:perf_hooks';

const spec = process.argv[2];
const t0 = performance.now();
await import(spec);
process.stdout.write(`${performance.now() - t0}\n`);
