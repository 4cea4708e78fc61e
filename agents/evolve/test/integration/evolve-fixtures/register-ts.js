// Lets a plain `node` child process of a test require the package's TypeScript sources (the
// test-only search topology lives in test/, which is never compiled to dist/): `.ts` files are
// compiled on load with @swc/core, the compiler jest uses. Workspace packages it imports
// (@troupe/actors, ...) still resolve to their built dist/.
const { readFileSync } = require('node:fs');
const { transformSync } = require('@swc/core');

require.extensions['.ts'] = (module, filename) => {
  const { code } = transformSync(readFileSync(filename, 'utf8'), {
    filename,
    jsc: { parser: { syntax: 'typescript' }, target: 'es2022' },
    module: { type: 'commonjs' },
    sourceMaps: 'inline',
  });
  module._compile(code, filename);
};
