/**
 * Lists follow `metadata.continue` to the end. The API server caps a page at `limit`; without
 * this, a fleet larger than one page would silently lose nodes or pods.
 */
export interface Page<T> {
  items: T[];
  metadata?: { _continue?: string };
}

/** Guards against a server that keeps returning a continue token (a bug would loop forever). */
const MAX_PAGES = 10_000;

export async function listAll<T>(fetchPage: (cont: string | undefined) => Promise<Page<T>>): Promise<T[]> {
  const out: T[] = [];
  let cont: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const res = await fetchPage(cont);
    out.push(...res.items);
    cont = res.metadata?._continue;
    if (cont === undefined || cont === '') return out;
  }
  throw new Error(`listing stopped after ${MAX_PAGES} pages`);
}
