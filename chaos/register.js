// Runs the chaos harness from its TypeScript sources: `node -r ./chaos/register.js chaos/src/main.ts`.
// The harness builds on @troupe/test-cluster, a test-only package that is never compiled to dist/,
// so `.ts` files are compiled on load with @swc/core (as jest does); every other @troupe package
// is loaded from its built dist/.
'use strict';
const { readFileSync } = require('node:fs');
const { transformSync } = require('@swc/core');

require.extensions['.ts'] = (module, filename) => {
  const { code } = transformSync(readFileSync(filename, 'utf8'), {
    filename,
    sourceMaps: 'inline',
    jsc: { parser: { syntax: 'typescript' }, target: 'es2022' },
    module: { type: 'commonjs' },
  });
  module._compile(code, filename);
};
