#!/usr/bin/env python3
"""Split MLX's doctest C++ test files into one program per TEST_CASE, for scripts/mlx_cpp_tests.sh.

Each program is the whole test file with every other TEST_CASE blanked out (newlines kept, so line
numbers in compiler errors still match the original file), with the includes of MLX's headers pointed
at kiln's umbrella header and the namespace mlx::core renamed kiln. Nothing else is changed.

Usage: split.py TESTS_DIR OUT_DIR  -> writes OUT_DIR/<file>__<n>.cpp and OUT_DIR/cases.tsv
"""
import os
import re
import sys

# Cases that exercise MLX internals kiln does not have (not its public array API); not counted.
EXCLUDED_FILES = {
    "tests.cpp": "doctest main",
    "gpu_tests.cpp": "GPU/Metal (built by MLX only with Metal or CUDA)",
    "allocator_tests.cpp": "allocator internals (mlx/allocator.h)",
}
EXCLUDED_CASES = {
    ("scheduler_tests.cpp", "test asynchronous launch"): "scheduler internals (scheduler::enqueue)",
    ("scheduler_tests.cpp", "test stream placement"): "scheduler internals (scheduler::enqueue)",
}


def skip_literal(src, i):
    """i at a quote or comment start; return the index just past it."""
    c = src[i]
    if src.startswith("//", i):
        j = src.find("\n", i)
        return len(src) if j < 0 else j
    if src.startswith("/*", i):
        j = src.find("*/", i + 2)
        return len(src) if j < 0 else j + 2
    if c == "R" and src.startswith('R"', i):
        m = re.match(r'R"([^(\s]*)\(', src[i:])
        if m:
            end = src.find(")" + m.group(1) + '"', i + m.end())
            return len(src) if end < 0 else end + len(m.group(1)) + 2
    if c in "\"'":
        j = i + 1
        while j < len(src) and src[j] != c:
            j += 2 if src[j] == "\\" else 1
        return j + 1
    return i + 1


def is_literal_start(src, i):
    c = src[i]
    if src.startswith("//", i) or src.startswith("/*", i):
        return True
    if c == '"':
        return True
    if c == "'":
        # not a digit separator (1'000)
        return not (i > 0 and src[i - 1].isalnum())
    if c == "R" and src.startswith('R"', i) and (i == 0 or not (src[i - 1].isalnum() or src[i - 1] == "_")):
        return True
    return False


def find_cases(src):
    """Return [(name, start, end)] of top-level TEST_CASE blocks."""
    cases = []
    depth = 0
    i = 0
    n = len(src)
    while i < n:
        if is_literal_start(src, i):
            i = skip_literal(src, i)
            continue
        c = src[i]
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        elif depth == 0 and src.startswith("TEST_CASE", i) and (i == 0 or not (src[i - 1].isalnum() or src[i - 1] == "_")):
            m = re.compile(r'TEST_CASE\s*\(\s*"((?:[^"\\]|\\.)*)"[^)]*\)\s*\{').match(src, i)
            if m:
                name = m.group(1)
                j = m.end()
                d = 1
                while j < n and d > 0:
                    if is_literal_start(src, j):
                        j = skip_literal(src, j)
                        continue
                    if src[j] == "{":
                        d += 1
                    elif src[j] == "}":
                        d -= 1
                    j += 1
                cases.append((name, i, j))
                i = j
                continue
        i += 1
    return cases


def rewrite(text):
    text = re.sub(r'#include\s+"mlx/[^"]*"', '#include "kiln/kiln.h"', text)
    text = text.replace("mlx::core", "kiln")
    return text


def blank(s):
    return "\n" * s.count("\n")


def main():
    tests_dir, out_dir = sys.argv[1], sys.argv[2]
    os.makedirs(out_dir, exist_ok=True)
    rows = []
    for fname in sorted(os.listdir(tests_dir)):
        if not fname.endswith(".cpp"):
            continue
        src = open(os.path.join(tests_dir, fname), encoding="utf-8").read()
        cases = find_cases(src)
        for k, (name, start, end) in enumerate(cases):
            excluded = EXCLUDED_FILES.get(fname) or EXCLUDED_CASES.get((fname, name))
            prog = os.path.join(out_dir, "%s__%03d.cpp" % (fname[:-4], k))
            if not excluded:
                parts = []
                pos = 0
                for (_, s, e) in cases:
                    if s == start:
                        continue
                    parts.append(src[pos:s])
                    parts.append(blank(src[s:e]))
                    pos = e
                parts.append(src[pos:])
                with open(prog, "w", encoding="utf-8") as f:
                    f.write("#line 1 \"%s\"\n" % fname)
                    f.write(rewrite("".join(parts)))
            rows.append("\t".join([os.path.basename(prog)[:-4], fname, name, excluded or ""]))
    with open(os.path.join(out_dir, "cases.tsv"), "w", encoding="utf-8") as f:
        f.write("\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
