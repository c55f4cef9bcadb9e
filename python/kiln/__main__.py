"""`python -m kiln ...` and the `kiln` entry point: the kiln command-line tool shipped in the package."""

import os
import sys


def _tool():
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "bin", "kiln")
    if not os.path.exists(path):
        raise SystemExit(f"kiln: the command-line tool is missing from the package (expected {path})")
    return path


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    tool = _tool()
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(tool, [tool] + argv)


if __name__ == "__main__":
    main()
