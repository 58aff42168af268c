import { errors } from './errors.ts';
import { qualifiedName, type ResourceDef } from './resources.ts';
import type { KubeObject } from './types.ts';

/**
 * DELETE's `preconditions` (DeleteOptions): the object must still be the one the client meant, by UID and
 * by resourceVersion, or the real server answers 409 Conflict with these words.
 */
export function checkDeletePreconditions(
  r: ResourceDef,
  name: string,
  current: KubeObject,
  options: { preconditions?: { uid?: string; resourceVersion?: string } },
): void {
  const res = qualifiedName(r);
  const pre = options.preconditions;
  if (pre?.uid && pre.uid !== current.metadata.uid) {
    throw errors.conflictMessage(
      r,
      name,
      `Operation cannot be fulfilled on ${res} "${name}": Precondition failed: UID in precondition: ${pre.uid}, ` +
        `UID in object meta: ${current.metadata.uid}`,
    );
  }
  if (pre?.resourceVersion && pre.resourceVersion !== current.metadata.resourceVersion) {
    throw errors.conflictMessage(
      r,
      name,
      `Operation cannot be fulfilled on ${res} "${name}": Precondition failed: ResourceVersion in ` +
        `precondition: ${pre.resourceVersion}, ResourceVersion in object ` +
        `meta: ${current.metadata.resourceVersion}`,
    );
  }
}
