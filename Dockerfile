# syntax=docker/dockerfile:1
# The gpu-reflex node agent (infra/k8s/node-agent.yaml runs it; docs/deploy.md#the-agent-image):
#
#   docker build -t registry.example.com/gpu-reflex/node-agent:0.1.0 .
#
# `build` installs the locked dependencies and runs `npm run build`, whose esbuild bundle
# .build/node-agent/ is the whole agent in plain JavaScript (agent.mjs and its chunks). `runtime` is a slim
# Node with that folder and koffi, the only module left outside the bundle (a native addon), carrying only
# its linux x64 glibc binary: no npm, no sources, no dev dependencies, nothing written at run time
# but the spool (a hostPath), so the root filesystem can be read-only.
# test/contract/agent-image.test.ts checks every COPY source; test/contract/build.test.ts assembles
# /app as the runtime stage would and starts the agent from it (no Docker engine is needed).

# linux/amd64 only: koffi's prebuilt comes per platform (@koromix/koffi-linux-x64); an arm64 image
# would copy @koromix/koffi-linux-arm64 instead.
ARG NODE_IMAGE=node:22-bookworm-slim

FROM --platform=linux/amd64 ${NODE_IMAGE} AS build
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

FROM --platform=linux/amd64 ${NODE_IMAGE} AS runtime
WORKDIR /app
# agent.mjs and the chunks its import() loads (the actuator's Kubernetes client: scripts/agent-bundle.js).
COPY --from=build /src/.build/node-agent/ ./
# koffi's ESM entry, its loader, and the linux x64 glibc binary it loads (the musl one stays behind).
COPY --from=build /src/node_modules/koffi/package.json /src/node_modules/koffi/index.js node_modules/koffi/
COPY --from=build /src/node_modules/koffi/src/koffi/index.js node_modules/koffi/src/koffi/
COPY --from=build /src/node_modules/koffi/src/koffi/src/static.js node_modules/koffi/src/koffi/src/
COPY --from=build /src/node_modules/@koromix/koffi-linux-x64/package.json /src/node_modules/@koromix/koffi-linux-x64/index.js node_modules/@koromix/koffi-linux-x64/
COPY --from=build /src/node_modules/@koromix/koffi-linux-x64/linux_x64/ node_modules/@koromix/koffi-linux-x64/linux_x64/
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
