# syntax=docker/dockerfile:1
# Vigil image: build with dev dependencies, run with production dependencies only.
#   docker build -t vigil:0.1.0 .
#   docker run --rm -p 3000:3000 vigil:0.1.0          (embedded mode, data inside the container)
#   docker run --rm -p 3000:3000 -v vigil-data:/app/data vigil:0.1.0
# Node 22 LTS (the code also runs on Node 20.19+), pinned by the digest of the tag's
# multi-platform index as docker-library/repo-info records it. To move to a newer 22.x, take
# the "Digest:" line of `docker buildx imagetools inspect node:22.<x>.<y>-bookworm-slim`.
ARG NODE_IMAGE=node:22.23.2-bookworm-slim@sha256:48e4b67d85f87bd551df43704e24d252f56cc5f8e9718841aace50f19948f0f9

# ── toolchain: better-sqlite3 compiles from source when no prebuilt binary matches ──
FROM ${NODE_IMAGE} AS toolchain
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
ENV npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false

# ── build: every dependency, compile TypeScript and copy the run-time assets ──
FROM toolchain AS build
COPY package.json package-lock.json ./
RUN npm ci
COPY . .
RUN npm run build
# the token tool the start-up banner advertises (`npm run token`), compiled to tools/: the
# runtime image has no tsx (a dev dependency) to run scripts/token.ts
RUN npx tsc --outDir tools --rootDir . --module NodeNext --moduleResolution NodeNext --target ES2022 --strict --skipLibCheck --esModuleInterop --types node scripts/token.ts

# ── deps: production dependencies only, native modules built here, not at run time ──
FROM toolchain AS deps
COPY package.json package-lock.json ./
RUN npm ci --omit=dev \
 && npm cache clean --force

# ── runtime: no compiler, no npm cache, non-root, tini as PID 1 ──
FROM ${NODE_IMAGE} AS runtime
RUN apt-get update \
 && apt-get install -y --no-install-recommends tini \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 vigil \
 && useradd --system --uid 10001 --gid vigil --home-dir /app --no-create-home --shell /usr/sbin/nologin vigil
WORKDIR /app
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    DATA_DIR=/app/data \
    npm_config_update_notifier=false \
    npm_config_logs_max=0 \
    npm_config_cache=/tmp/npm-cache
# code and dependencies belong to root and are read-only for the service user
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/tools ./tools
# package.json carries "type": "module": dist/*.js and tools/**/*.js are ES modules.
# `npm run token -- --user alice` (e.g. through `docker exec`) runs the compiled tool here;
# npm writes no logs and keeps its cache in /tmp (the home directory /app is read-only).
COPY package.json ./
RUN npm pkg set scripts.token="node tools/scripts/token.js" \
 && mkdir -p /app/data && chown vigil:vigil /app/data
USER 10001:10001
EXPOSE 3000
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/livez').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# tini forwards SIGTERM to node and reaps zombies; Vigil drains on SIGTERM (docs/operating.md)
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["node", "dist/main.js"]
