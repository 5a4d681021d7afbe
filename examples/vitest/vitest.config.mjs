// Nothing special is needed: the emulator runs its isolates in a worker process of its own.
// `root` keeps `include` to this folder, wherever vitest is started from.
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: { root: fileURLToPath(new URL(".", import.meta.url)), include: ["**/*.test.mjs"], testTimeout: 30_000, hookTimeout: 30_000 },
});
