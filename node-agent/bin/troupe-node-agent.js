#!/usr/bin/env node
'use strict';
// The tracked `troupe-node-agent` bin target. npm links a package's bin only when its target file exists at
// install time, and `npm ci` runs before the build on a fresh clone, so the bin cannot point at
// dist/ directly (the link would never be made); this file exists from the clone on and loads
// the build, or says how to make it.
const path = require('node:path');
const fs = require('node:fs');
const main = path.join(__dirname, '..', 'dist', 'main.js');
if (!fs.existsSync(main)) {
  process.stderr.write(
    `troupe-node-agent: ${path.relative(process.cwd(), main) || main} is not built yet; run 'bash scripts/setup' (or 'npm run build') in the Troupe checkout first\n`,
  );
  process.exit(1);
}
require(main);
