"""Run a list of items in one worker process that survives crashes (shared by the interop scripts).

The worker is `python SCRIPT --worker ARGS... START`; for each item i from START on it prints the
JSON line {"start": i} and then one result line {"i": i, ...}. If the worker dies inside an item
(MLX can segfault on a bad file), that item gets {"status": "error", "why": "... crashed ..."} and a
new worker continues with the next item, so one process normally does all the work.
"""
import json
import subprocess
import sys


def run(script, args, count, what="MLX"):
    results = {}
    start = 0
    while start < count:
        before = len(results)
        p = subprocess.Popen([sys.executable, script, "--worker", *args, str(start)],
                             stdout=subprocess.PIPE, text=True)
        current = None
        for line in p.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                sys.stdout.write(line)  # the worker's own prints pass through
                continue
            if "start" in msg:
                current = msg["start"]
            else:
                results[msg["i"]] = msg
                current = None
        rc = p.wait()
        if current is not None:
            results[current] = {"i": current, "status": "error",
                                "why": "%s crashed in this case (exit status %d)" % (what, rc)}
        elif len(results) == before:  # died before its first item
            results[start] = {"i": start, "status": "error",
                              "why": "%s worker exited with status %d before running it" % (what, rc)}
        # A worker may stop early on purpose (after an MLX error); continue after the last result.
        start = max(results) + 1
    return results
