// Nothing special is needed: the emulator runs its isolates in a worker process of its own.
import { defineConfig } from "vitest/config";

export default defineConfig({ test: { include: ["**/*.test.mjs"], testTimeout: 30_000, hookTimeout: 30_000 } });
