# clusterlet's container image: `docker build -t clusterlet:latest .`
# Node 24 slim; the runtime stage holds only dist/ (clusterlet bundled with its dependencies, hack/build.ts) and
# package.json, runs as a non-root user and needs no shell (exec-form entrypoint). manifests/host runs it.
ARG NODE_IMAGE=node:24-slim

# Type-check src/ and bundle it into dist/ with the dev dependencies (TypeScript, esbuild).
FROM ${NODE_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY hack/build.ts ./hack/
COPY src ./src
RUN npm run build

FROM ${NODE_IMAGE}
LABEL org.opencontainers.image.title="clusterlet" \
      org.opencontainers.image.description="A virtual kubelet that turns each member Kubernetes cluster into one virtual node of a host cluster" \
      org.opencontainers.image.licenses="Apache-2.0"
ENV NODE_ENV=production
# src/nodeflags.ts NODE_ENV_VARS.
ENV MALLOC_ARENA_MAX=2
WORKDIR /app
# package.json: "type": "module" for dist/, and the version clusterlet reports.
COPY --from=build /src/dist ./dist
COPY package.json ./
# 65532: the conventional "nonroot" uid/gid; manifests/host runs the pod as it too.
USER 65532:65532
# 10250 kubelet API, 10255 /healthz, /readyz, /metrics.
EXPOSE 10250 10255
ENTRYPOINT ["node", "--max-semi-space-size=4", "--heap-growing-percent=10", "--no-node-snapshot", "--expose-gc", "dist/cli.js"]
