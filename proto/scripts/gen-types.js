#!/usr/bin/env node
// Generates the typed gRPC code of the job API into src/generated with proto-loader-gen-types
// (protobufjs-based), or with --check verifies that the committed code is up to date.
//
//   node scripts/gen-types.js            regenerate src/generated
//   node scripts/gen-types.js --check    regenerate into a temp dir and diff; exit 1 when stale
//   node scripts/gen-types.js --print-options   print GEN_OPTIONS as JSON (used by a unit test)
//
// GEN_OPTIONS must stay identical to JOB_API_LOADER_OPTIONS in src/job-api.ts (the runtime
// loader); test/unit/job-api.test.ts fails when they differ.
'use strict';

const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const PACKAGE_ROOT = path.resolve(__dirname, '..');
const OUT_DIR = path.join(PACKAGE_ROOT, 'src', 'generated');
const PROTO_FILES = ['troupe/v1/jobs.proto'];

/** Options shared with the runtime loader (@grpc/proto-loader `Options`). */
const GEN_OPTIONS = {
  keepCase: false,
  longs: 'Number',
  enums: 'String',
  defaults: true,
  oneofs: true,
};

function generatorArgs(outDir) {
  return [
    require.resolve('@grpc/proto-loader/build/bin/proto-loader-gen-types.js'),
    ...(GEN_OPTIONS.keepCase ? ['--keepCase'] : []),
    `--longs=${GEN_OPTIONS.longs}`,
    `--enums=${GEN_OPTIONS.enums}`,
    ...(GEN_OPTIONS.defaults ? ['--defaults'] : []),
    ...(GEN_OPTIONS.oneofs ? ['--oneofs'] : []),
    '--includeComments',
    '--grpcLib=@grpc/grpc-js',
    // Relative on purpose: the generator writes the proto path into every file, and absolute
    // paths would make the committed code differ from machine to machine.
    '-I',
    '.',
    '-O',
    outDir,
    ...PROTO_FILES,
  ];
}

function generate(outDir) {
  fs.rmSync(outDir, { recursive: true, force: true });
  fs.mkdirSync(outDir, { recursive: true });
  execFileSync(process.execPath, generatorArgs(outDir), { cwd: PACKAGE_ROOT, stdio: 'inherit' });
}

function listFiles(dir, base = dir) {
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .flatMap((entry) => {
      const full = path.join(dir, entry.name);
      return entry.isDirectory() ? listFiles(full, base) : [path.relative(base, full)];
    })
    .sort();
}

/** Differences between the committed code and freshly generated code, as readable lines. */
function staleFiles() {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'troupe-proto-gen-'));
  try {
    generate(tmp);
    const fresh = listFiles(tmp);
    const committed = listFiles(OUT_DIR);
    const problems = [];
    for (const file of fresh) {
      if (!committed.includes(file)) problems.push(`missing: src/generated/${file}`);
      else if (
        fs.readFileSync(path.join(tmp, file), 'utf8') !==
        fs.readFileSync(path.join(OUT_DIR, file), 'utf8')
      ) {
        problems.push(`changed: src/generated/${file}`);
      }
    }
    for (const file of committed) {
      if (!fresh.includes(file)) problems.push(`extra: src/generated/${file}`);
    }
    return problems;
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

function main(argv) {
  if (argv.includes('--print-options')) {
    process.stdout.write(`${JSON.stringify(GEN_OPTIONS)}\n`);
    return 0;
  }
  if (argv.includes('--check')) {
    const problems = staleFiles();
    if (problems.length === 0) {
      process.stdout.write('src/generated is up to date with troupe/v1/*.proto\n');
      return 0;
    }
    process.stderr.write(
      `src/generated is stale: the .proto files changed without regenerating.\n` +
        problems.map((p) => `  ${p}\n`).join('') +
        `Run \`npm run gen -w @troupe/proto\` (or \`npm run proto:gen\` at the root) and commit the result.\n`,
    );
    return 1;
  }
  generate(OUT_DIR);
  process.stdout.write(`generated ${listFiles(OUT_DIR).length} files into src/generated\n`);
  return 0;
}

process.exitCode = main(process.argv.slice(2));
