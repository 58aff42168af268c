# syntax=docker/dockerfile:1
# The gpu-reflex node agent (infra/k8s/node-agent.yaml runs it; docs/deploy.md#the-agent-image), for
# linux/amd64 and linux/arm64 (GH200/GB200 nodes are arm64) in one multi-platform image:
#
#   IMAGE=registry.example.com/gpu-reflex/node-agent:0.1.0 npm run image:build
#   (docker buildx build --platform linux/amd64,linux/arm64 --tag "$IMAGE" --push .)
#
# `build` installs the locked dependencies and runs `npm run build`, whose esbuild bundle
# .build/node-agent/ is the whole agent in plain JavaScript (agent.mjs and its chunks). `runtime` is a slim
# Node with that folder and koffi, the only module left outside the bundle (a native addon), carrying only
# its linux glibc binary for the platform's architecture: no npm, no sources, no dev dependencies,
# nothing written at run time but the spool (a hostPath), so the root filesystem can be read-only.
# test/contract/agent-image.test.ts checks every COPY source and lays out both architectures' koffi;
# test/contract/build.test.ts assembles /app as the runtime stage would and starts the agent from it
# (no Docker engine is needed).

# Node 22 on Debian bookworm, slim, pinned by the digest of its multi-platform index: one digest
# names every platform's image, and buildx takes linux/amd64's and linux/arm64's from it. A tag moves
# (security fixes land under the same name); a digest does not, so what was tested is what ships.
# To move to the tag's current image: `npm run image:pin` (scripts/pin-node-image.js: reads the
# index with `docker buildx imagetools inspect --raw node:22-bookworm-slim`, refuses one without both
# platforms, writes its sha256 here), then rebuild and test. docs/deploy.md#the-agent-image.
# The digest below was written with no network to check it against Docker Hub: run `npm run image:pin`
# once before the first build (a digest that is not the index's fails the build; it never ships another image).
ARG NODE_IMAGE=node:22-bookworm-slim@sha256:9c2c405e3ff9b9afb2873232d24bb06367d649aa3e6259cbe314da59578e81e9

# The build runs on the builder's own platform ($BUILDPLATFORM): the bundle is plain JavaScript, the
# same for every target, and no emulator is needed. Only the native addon differs per target (below).
FROM --platform=$BUILDPLATFORM ${NODE_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
# No install scripts: esbuild's and koffi's binaries come as optional dependencies; koffi's script
# would only try a source build.
RUN npm ci --ignore-scripts --no-audit --no-fund
# What `npm run build` reads: serverless.yml (the function list), the build scripts, and the
# sources the agent and the functions import (test/contract/agent-image.test.ts follows the imports).
COPY tsconfig.json serverless.yml ./
COPY scripts/ scripts/
COPY bin/ bin/
COPY events/ events/
COPY functions/ functions/
# chatops reaches infra/local through functions/mig/cli.ts (its --fleet reader): bundled too.
COPY infra/ infra/
COPY node-agent/ node-agent/
RUN npm run build
# koffi and its prebuilt binary for the target platform's architecture (Docker's TARGETARCH, amd64 or
# arm64), glibc only: from this install when the builder has the same architecture, otherwise fetched
# at package-lock.json's version and checked against its integrity (scripts/agent-modules.js).
ARG TARGETARCH
RUN node scripts/agent-modules.js --arch "$TARGETARCH" --out .build/agent-modules

FROM ${NODE_IMAGE} AS runtime
WORKDIR /app
# agent.mjs and the chunks its import() loads (the actuator's Kubernetes client: scripts/agent-bundle.js).
COPY --from=build /src/.build/node-agent/ ./
# koffi's ESM entry, its loader and the target's linux glibc binary, nothing else.
COPY --from=build /src/.build/agent-modules/node_modules/ node_modules/
# Non-root by default: NVML's read-only queries (the NVIDIA runtime mounts the driver and
# /dev/nvidia*, world-readable), /proc/<pid>/cgroup for pid → pod, and /metrics need no root.
# What does need root, so the DaemonSet runs this container as UID 0 with every capability dropped
# but SYSLOG (infra/k8s/node-agent.yaml says so beside it):
#   - /dev/kmsg where kernel.dmesg_restrict=1 (Debian's and Ubuntu's default) needs CAP_SYSLOG, and
#     Kubernetes grants an added capability to UID 0 only (no ambient capabilities);
#   - the spool, /var/lib/gpu-reflex on the node, is a hostPath the kubelet creates root-owned;
#   - the opt-in actuator (GPU_ACTIONS): nvidia-smi --gpu-reset and the device plugin's fence file.
USER 65532:65532
ENTRYPOINT ["node", "/app/agent.mjs"]
