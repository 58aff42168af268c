#!/usr/bin/env node
// Pins the Dockerfile's base image to the current digest of its tag's multi-platform index:
//   npm run image:pin                 # node:22-bookworm-slim, what the Dockerfile names
//   npm run image:pin -- --tag node:22-bookworm-slim --dry-run
// It reads the index as the registry serves it (`docker buildx imagetools inspect --raw TAG`; needs
// Docker's CLI with buildx and the registry, no engine), refuses anything but an image index or
// manifest list holding linux/amd64 and linux/arm64 images (the image is built for both), and writes
// `ARG NODE_IMAGE=TAG@sha256:<sha256 of those bytes>` (a manifest's digest is the sha256 of its exact
// bytes: OCI image spec, descriptor.md "Digests",
// https://github.com/opencontainers/image-spec/blob/main/descriptor.md#digests).
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

/** The platforms the agent image is built for (the Dockerfile, scripts/agent-modules.js, image:build). */
export const PLATFORMS = ['linux/amd64', 'linux/arm64'];
const INDEX_TYPES = [
  'application/vnd.oci.image.index.v1+json',
  'application/vnd.docker.distribution.manifest.list.v2+json',
];
const ARG_LINE = /^ARG NODE_IMAGE=(\S+)$/m;

/** The digest to pin from an index's raw bytes, after checking it holds every platform the image needs. */
export function indexDigest(raw) {
  let index;
  try {
    index = JSON.parse(raw.toString('utf8'));
  } catch {
    throw new Error('the registry did not answer with JSON');
  }
  if (!INDEX_TYPES.includes(index.mediaType))
    throw new Error(
      `not a multi-platform index (mediaType ${index.mediaType}): a single platform's digest would pin one`,
    );
  const have = (index.manifests ?? []).map((m) => `${m.platform?.os}/${m.platform?.architecture}`);
  const missing = PLATFORMS.filter((p) => !have.includes(p));
  if (missing.length > 0) throw new Error(`the index has no ${missing.join(', ')} image (it has ${have.join(', ')})`);
  return `sha256:${createHash('sha256').update(raw).digest('hex')}`;
}

/** The Dockerfile's text with NODE_IMAGE pinned to `tag@digest`. */
export function pinned(dockerfile, tag, digest) {
  if (!ARG_LINE.test(dockerfile)) throw new Error('the Dockerfile has no `ARG NODE_IMAGE=` line');
  return dockerfile.replace(ARG_LINE, `ARG NODE_IMAGE=${tag}@${digest}`);
}

/** The tag the Dockerfile pins now (its NODE_IMAGE without the digest). */
export function currentTag(dockerfile) {
  const m = ARG_LINE.exec(dockerfile);
  if (!m) throw new Error('the Dockerfile has no `ARG NODE_IMAGE=` line');
  return m[1].split('@')[0];
}

if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  const { values } = parseArgs({
    options: { tag: { type: 'string' }, 'dry-run': { type: 'boolean' }, dockerfile: { type: 'string' } },
    strict: true,
  });
  const file = values.dockerfile ?? new URL('../Dockerfile', import.meta.url).pathname;
  try {
    const text = readFileSync(file, 'utf8');
    const tag = values.tag ?? currentTag(text);
    const raw = execFileSync('docker', ['buildx', 'imagetools', 'inspect', '--raw', tag]);
    const digest = indexDigest(raw);
    if (!values['dry-run']) writeFileSync(file, pinned(text, tag, digest));
    process.stdout.write(`${values['dry-run'] ? 'would pin' : 'pinned'} ${tag}@${digest} (${PLATFORMS.join(', ')})\n`);
  } catch (err) {
    process.stderr.write(`image:pin: ${err.message}\n`);
    process.exit(2);
  }
}
