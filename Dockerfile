# One image for every process of the system: gateways, actors and the one-shot migrations.
# What a container runs is chosen by SVC_GATEWAYS / SVC_ACTORS (see docker-compose.yml).
FROM node:20-bookworm-slim

# Debian's Chromium for the invoice PDFs (puppeteer-core never downloads a browser), with fonts.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      chromium fonts-liberation fonts-dejavu-core ca-certificates \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app
# NODE_OPTIONS: 64 MB semi-spaces for V8's young generation, as scripts/start.sh sets (the metrics ingest's parse
# garbage is short-lived; its consumer spends ~12% less CPU per sample). A container's own NODE_OPTIONS replaces it.
ENV PUPPETEER_SKIP_DOWNLOAD=1 \
    SVC_CHROMIUM_PATH=/usr/bin/chromium \
    SVC_SERVER_BIND=0.0.0.0 \
    NODE_OPTIONS=--max-semi-space-size=64

# Dependencies first, so a code change does not reinstall them. tsx runs the TypeScript, so dev
# dependencies stay in.
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund && npm cache clean --force

COPY . .
RUN mkdir -p data && chown -R node:node data
USER node

EXPOSE 8080 8081
STOPSIGNAL SIGTERM
# One node process with tsx's loader: `docker stop`'s SIGTERM reaches the app, which drains and exits.
CMD ["node", "--import", "tsx", "main.ts"]
