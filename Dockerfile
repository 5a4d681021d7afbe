# ptc-emulator: docker build -t ptc-emulator . && docker run -p 8787:8787 ptc-emulator
# isolated-vm 5.0.4 compiles with node-gyp against Node 20's headers, hence the build tools.
FROM node:20-bookworm-slim AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund

FROM node:20-bookworm-slim
ENV NODE_ENV=production HOST=0.0.0.0 PORT=8787
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY package.json ./
COPY schemas ./schemas
COPY runtime ./runtime
COPY server ./server
USER node
EXPOSE 8787
HEALTHCHECK --interval=30s --timeout=3s CMD node -e "fetch('http://127.0.0.1:8787/health').then(r => process.exit(r.ok ? 0 : 1), () => process.exit(1))"
# --no-node-snapshot: isolated-vm 5.0.4 on Node 20 needs it in every process that loads it.
CMD ["node", "--no-node-snapshot", "--import", "tsx", "server/main.ts"]
