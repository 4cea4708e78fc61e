#!/bin/bash
# Hidden grader of py-csv-quotes: the visible tests and the hidden ones, against /workspace.
set -u
cd "${WORKSPACE:-/workspace}"
export PYTHONPATH="$PWD"
python3 -m unittest discover -s tests 2>&1 || { echo "FAILED visible tests"; exit 1; }
python3 "${GRADER_DIR:-/grader}/test_hidden.py" -v 2>&1
