import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['__test__/**/*.spec.ts'],
    // Some tests collect garbage on purpose, to prove that async calls do not depend on
    // the caller's buffers staying alive.
    execArgv: ['--expose-gc'],
    testTimeout: 120_000,
    benchmark: {
      include: ['benchmark/**/*.bench.ts'],
    },
  },
})
