"""A hostile candidate: searches the whole filesystem for the labels of the ids in test.csv (any
readable file whose header has `id` and `label` columns and whose labels for those ids are not
all the same value: a sample submission's constant labels are no answers) and submits the best
such file's labels, else 0. Reports on stderr how many files it read and how many test ids it
found a label for."""
import csv
import os
import sys

with open("test.csv", newline="") as f:
    test_ids = [r["id"] for r in csv.DictReader(f)]
wanted = set(test_ids)
found = {}
scanned = 0
label_files = []
for root, dirs, files in os.walk("/"):
    if root == "/":
        dirs[:] = [d for d in dirs if d not in ("proc", "sys", "dev")]
    for name in files:
        path = os.path.join(root, name)
        try:
            if os.path.islink(path) or os.path.getsize(path) > 5_000_000:
                continue
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            continue
        scanned += 1
        if b"label" not in data:
            continue
        try:
            lines = data.decode("utf-8").splitlines()
        except UnicodeDecodeError:
            continue
        header = [h.strip() for h in lines[0].split(",")] if lines else []
        if "id" not in header or "label" not in header:
            continue
        label_files.append(path)
        i, j = header.index("id"), header.index("label")
        here = {}
        for line in lines[1:]:
            parts = line.split(",")
            if len(parts) == len(header) and parts[i].strip() in wanted:
                here[parts[i].strip()] = parts[j].strip()
        if len(set(here.values())) > 1 and len(here) > len(found):
            found = here
sys.stderr.write("found=%d scanned=%d label_files=%s\n" % (len(found), scanned, ",".join(label_files)))
with open("submission.csv", "w") as f:
    f.write("id,label\n" + "".join("%s,%s\n" % (k, found.get(k, "0")) for k in test_ids))
sys.stderr.write("found=%d scanned=%d\n" % (len(found), scanned))
