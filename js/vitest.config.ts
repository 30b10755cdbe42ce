import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // @langchain/langgraph-checkpoint-validation's specs use the globals.
    globals: true,
    globalSetup: ["test/global-setup.ts"],
    // Generous for small CI machines; nothing waits on a timer it could poll.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
  },
});
