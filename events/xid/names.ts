/**
 * NVIDIA's mnemonic and investigatory action of each code, for people (`gpu-reflex xid explain`):
 * kept out of the catalog the functions bundle (see generate.ts `render`).
 */
import { NVIDIA_XID_NAMES } from './nvidia-names.generated.ts';

const BY_CODE: ReadonlyMap<number, { mnemonic: string; investigatory: string }> = new Map(
  NVIDIA_XID_NAMES.map(([code, mnemonic, investigatory]) => [code, { mnemonic, investigatory }]),
);

/** undefined for a code NVIDIA's catalog does not list. */
export function nvidiaNames(code: number): { mnemonic: string; investigatory: string } | undefined {
  return BY_CODE.get(code);
}
