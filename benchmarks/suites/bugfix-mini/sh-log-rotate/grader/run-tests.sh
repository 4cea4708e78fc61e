#!/bin/bash
# Hidden grader of sh-log-rotate: the visible tests and the hidden ones, against /workspace.
set -u
cd "${WORKSPACE:-/workspace}"
bash tests/run.sh || { echo "FAILED visible tests"; exit 1; }
bash "${GRADER_DIR:-/grader}/hidden-tests.sh" "$PWD"
