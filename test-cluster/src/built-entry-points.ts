import path from 'node:path';

/** The repository root (this package sits in `<root>/test-cluster/src`). */
export const REPO_ROOT = path.resolve(__dirname, '..', '..');

/** The built `troupe-coordinator` entry point (kept fresh by the jest global set-up). */
export const COORDINATOR_MAIN = path.join(REPO_ROOT, 'coordinator', 'dist', 'main.js');

/** The built `troupe-node-agent` entry point (kept fresh by the jest global set-up). */
export const NODE_AGENT_MAIN = path.join(REPO_ROOT, 'node-agent', 'dist', 'main.js');
