"""`python3 -m appworld_lite.init --db PATH --seed N`: writes a fresh world for seed N at PATH
(creating the directory) and prints one JSON line `{"ok": true, "supervisor": {"name", "email"}}`.
On bad arguments it prints `{"ok": false, "error": ...}` and exits 2."""

from __future__ import annotations

import argparse
import json
import sys

from .world import generate


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        print(json.dumps({"ok": False, "error": message}), flush=True)
        sys.exit(2)


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(prog="python3 -m appworld_lite.init")
    parser.add_argument("--db", required=True, help="path of the world's SQLite file")
    parser.add_argument("--seed", required=True, type=int, help="world seed (an integer)")
    args = parser.parse_args(argv)
    supervisor = generate(args.db, args.seed)
    print(json.dumps({"ok": True, "supervisor": supervisor}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
