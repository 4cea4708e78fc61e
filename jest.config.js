// Two projects: unit tests run in parallel; integration tests start real services and run in band
// (scripts/test runs them with --runInBand). Tests import workspace packages from source.
// Packages sit in top-level folders, and the agents' sibling packages in agents/<name>/.
const moduleNameMapper = {
  '^@troupe/(llm|evolve|rsi)$': '<rootDir>/agents/$1/src/index.ts',
  '^@troupe/([a-z-]+)$': '<rootDir>/$1/src/index.ts',
};
const packages = '<rootDir>/{*,agents/*}';
const transform = {
  '^.+\\.ts$': [
    '@swc/jest',
    { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'commonjs' } },
  ],
};
const common = {
  rootDir: __dirname,
  transform,
  moduleNameMapper,
  testEnvironment: 'node',
  // Suites vendor published packages (package.json files that would collide as haste modules).
  modulePathIgnorePatterns: ['<rootDir>/.*/dist/', '<rootDir>/benchmarks/suites/'],
};

/** @type {import('jest').Config} */
module.exports = {
  projects: [
    { ...common, displayName: 'unit', testMatch: [`${packages}/test/unit/**/*.test.ts`] },
    {
      ...common,
      displayName: 'integration',
      testMatch: [`${packages}/test/integration/**/*.int.test.ts`],
      setupFilesAfterEnv: ['<rootDir>/jest.integration-setup.js'],
      // Integration tests spawn dist/main.js: rebuild (incrementally) when dist/ is stale.
      globalSetup: '<rootDir>/test-cluster/src/jest-global-setup.ts',
    },
  ],
};
