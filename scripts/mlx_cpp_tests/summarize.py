#!/usr/bin/env python3
"""Summarize a scripts/mlx_cpp_tests.sh run: WORK_DIR holds cases.tsv and, per case, NAME.compile.log,
NAME.run.log and NAME.status (compile-failed | compiled rc=N)."""
import collections
import os
import re
import sys

work = sys.argv[1]
rows = [l.rstrip("\n").split("\t") for l in open(os.path.join(work, "cases.tsv"), encoding="utf-8") if l.strip()]
excluded = collections.Counter()
total = compiled = passed = nocheck = 0
fails = collections.defaultdict(list)


def first_error(log):
    for line in log.splitlines():
        m = re.search(r"error: (.*)", line)
        if m:
            msg = m.group(1)
            msg = re.sub(r"'[^']*'", "'…'", msg) if len(msg) > 140 else msg
            return msg[:160]
    return "(no error line)"


for key, fname, name, excl in rows:
    if excl:
        excluded[excl] += 1
        continue
    total += 1
    label = "%s: %s" % (fname, name)
    status_path = os.path.join(work, key + ".status")
    status = open(status_path).read().strip() if os.path.exists(status_path) else "not run"
    if status == "compile-failed":
        log = open(os.path.join(work, key + ".compile.log"), errors="replace").read()
        fails["does not compile"].append("%s  [%s]" % (label, first_error(log)))
        continue
    if not status.startswith("compiled"):
        fails["not run"].append(label)
        continue
    compiled += 1
    rc = int(status.split("rc=")[1])
    out = open(os.path.join(work, key + ".run.log"), errors="replace").read()
    m = re.search(r"kiln-shim: checks=(\d+) failed=(\d+)", out)
    if rc == 0 and m:
        passed += 1
        if int(m.group(1)) == 0:
            nocheck += 1
            fails["passed but ran no check (counted as passed, as doctest does)"].append(label)
        continue
    if rc in (124, 137):
        fails["timed out"].append(label)
    elif m:
        first = next((l for l in out.splitlines() if "check failed" in l), "")
        fails["checks failed"].append("%s  [%s of %s failed; first: %s]" % (label, m.group(2), m.group(1), first.strip()[:200]))
    elif "kiln-shim: exception:" in out:
        msg = out.split("kiln-shim: exception:")[1].strip().splitlines()[0]
        fails["uncaught exception"].append("%s  [%s]" % (label, msg[:200]))
    else:
        fails["crashed (rc=%d)" % rc].append(label)

for reason in sorted(fails):
    print("== %s (%d)" % (reason, len(fails[reason])))
    for item in fails[reason]:
        print("   " + item)
print("excluded (not counted): %d" % sum(excluded.values()))
for why, n in sorted(excluded.items()):
    print("   %d  %s" % (n, why))
print("mlx cpp tests: %d compile, %d pass (of %d)" % (compiled, passed, total))
