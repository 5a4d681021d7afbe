# ptc-emulator as an image:
#   docker build -t ptc-emulator .
#   docker run -p 8787:8787 -v ptc-data:/data ptc-emulator
# The image holds the package exactly as npm users get it: the build stage packs it and
# installs the tarball without dev dependencies; the final stage copies that install only.
# scripts/check-package.mjs runs these steps without Docker and checks the result.

FROM node:24-bookworm-slim AS build
# No compiler: isolated-vm 7.0.1 ships prebuilt binaries for Node 24 and 26 (glibc and musl,
# x64 and arm64) and the SQLite store is Node's own node:sqlite, so nothing is built at install.
WORKDIR /src
COPY . .
# `npm ci` builds dist/ (prepare); `npm pack` makes the tarball users would install.
RUN npm ci --no-audit --no-fund && npm pack --pack-destination /tmp
WORKDIR /app
RUN npm init -y >/dev/null \
 && npm install --omit=dev --no-audit --no-fund /tmp/ptc-emulator-*.tgz

FROM node:24-bookworm-slim
LABEL org.opencontainers.image.title="ptc-emulator" \
      org.opencontainers.image.description="Self-hosted emulator of OpenAI's programmatic tool calling behind the Responses API" \
      org.opencontainers.image.licenses="MIT" \
      org.opencontainers.image.version="0.1.0" \
      org.opencontainers.image.documentation="https://www.npmjs.com/package/ptc-emulator"
ENV NODE_ENV=production HOST=0.0.0.0 PORT=8787 PTC_DATA_DIR=/data
COPY --from=build /app/node_modules /app/node_modules
# The SQLite store and the generated sealing key live in /data, owned by the user the server
# runs as; a named volume mounted there starts with this ownership.
RUN mkdir -p /data && chown node:node /data
VOLUME /data
USER node
WORKDIR /app
EXPOSE 8787
HEALTHCHECK --interval=30s --timeout=3s --start-period=15s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + process.env.PORT + '/health').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# isolated-vm needs --no-node-snapshot (7.0.1 still documents it). The CLI gives its workers the
# flag and, started without it, runs itself again with it: passing it here saves that.
ENTRYPOINT ["node", "--no-node-snapshot", "/app/node_modules/ptc-emulator/dist/cli/main.js"]
CMD ["serve"]
