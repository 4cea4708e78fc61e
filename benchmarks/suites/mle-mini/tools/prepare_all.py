"""Runs every competition's `prepare.py` (MLE-bench's prepare step), writing
competitions/<id>/prepared/{public,private}/. Offline: the data are scikit-learn's bundled
datasets and generators. Run inside the troupe-python image (Debian's python3-sklearn):

    docker run --rm -v "$PWD/benchmarks/suites/mle-mini:/s" -w /s troupe-python:latest \
        python3 tools/prepare_all.py
"""
import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)


def main():
    comps = os.path.join(ROOT, "competitions")
    for name in sorted(os.listdir(comps)):
        folder = os.path.join(comps, name)
        spec = importlib.util.spec_from_file_location("prepare_" + name.replace("-", "_"), os.path.join(folder, "prepare.py"))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        public = os.path.join(folder, "prepared", "public")
        private = os.path.join(folder, "prepared", "private")
        module.prepare(public, private)
        print("[prepare] %s: written" % name, flush=True)


if __name__ == "__main__":
    main()
