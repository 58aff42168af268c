/** scripts/pin-node-image.js: the Dockerfile's base image pinned to its tag's multi-platform index digest. */
export const PLATFORMS: string[];
export function indexDigest(raw: Buffer): string;
export function pinned(dockerfile: string, tag: string, digest: string): string;
export function currentTag(dockerfile: string): string;
