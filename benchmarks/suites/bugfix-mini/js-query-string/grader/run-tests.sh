#!/bin/bash
# Hidden grader of js-query-string: the visible tests and the hidden ones, against /workspace.
set -u
cd "${WORKSPACE:-/workspace}"
node --test test/ 2>&1 || { echo "FAILED visible tests"; exit 1; }
node --test "${GRADER_DIR:-/grader}/hidden.test.js" 2>&1
