// Module hooks (node:module `register`) that write the URL of every module node loads, one a line,
// to the file `data.log`, before the module is evaluated. Written synchronously, so once an
// `await import()` has settled, every module it loaded is in the file. test/contract/build.test.ts
// uses it to see which of a bundle's chunks a cold start evaluates and which only a first call.
import { appendFileSync } from 'node:fs';

let log;

export function initialize(data) {
  log = data.log;
}

export async function load(url, context, next) {
  appendFileSync(log, `${url}\n`);
  return next(url, context);
}
