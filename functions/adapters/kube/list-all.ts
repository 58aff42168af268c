/**
 * Lists follow `metadata.continue` to the end. The API server caps a page at `limit`; without
 * this, a fleet larger than one page would silently lose nodes or pods.
 *
 * The typed clients (CoreV1Api…) deserialize the list's metadata into V1ListMeta, whose field is
 * `_continue`; the custom-objects client hands the JSON back as served, where it is `continue`
 * (ListMeta in https://kubernetes.io/docs/reference/kubernetes-api/common-definitions/list-meta/).
 * Both are read here, so no caller can follow one and silently stop at the other.
 */
export interface Page<T> {
  items: T[];
  metadata?: { _continue?: string; continue?: string };
}

/** Guards against a server that keeps returning a continue token (a bug would loop forever). */
const MAX_PAGES = 10_000;

export async function listAll<T>(fetchPage: (cont: string | undefined) => Promise<Page<T>>): Promise<T[]> {
  const out: T[] = [];
  let cont: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const res = await fetchPage(cont);
    out.push(...res.items);
    cont = res.metadata?._continue || res.metadata?.continue;
    if (cont === undefined || cont === '') return out;
  }
  throw new Error(`listing stopped after ${MAX_PAGES} pages`);
}
