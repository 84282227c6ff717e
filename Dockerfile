# syntax=docker/dockerfile:1
# Vigil image: build with dev dependencies, run with production dependencies only.
#   docker build -t vigil:0.1.0 .
#   docker run --rm -p 3000:3000 vigil:0.1.0          (embedded mode, data inside the container)
#   docker run --rm -p 3000:3000 -v vigil-data:/app/data vigil:0.1.0
ARG NODE_IMAGE=node:20-bookworm-slim

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
    DATA_DIR=/app/data
# code and dependencies belong to root and are read-only for the service user
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# package.json carries "type": "module": dist/*.js are ES modules
COPY package.json ./
RUN mkdir -p /app/data && chown vigil:vigil /app/data
USER 10001:10001
EXPOSE 3000
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/livez').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# tini forwards SIGTERM to node and reaps zombies; Vigil drains on SIGTERM (docs/operating.md)
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["node", "dist/main.js"]
