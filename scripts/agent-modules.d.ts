/** scripts/agent-modules.js: koffi and its binary for one target architecture, for the agent image. */
export const ARCHES: Record<string, string>;
export function locked(root: string, name: string): { version: string; integrity: string };
export function integrityOf(file: string): string;
export function layout(o: {
  root: string;
  out: string;
  arch: string;
  fetch?: (name: string, version: string, dir: string) => string;
  lock?: (name: string) => { version: string; integrity: string };
}): { koffi: string; binary: string; version: string; fetched: boolean };
