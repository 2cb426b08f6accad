"""A worker that only writes down how it started, for the launcher's tests: its environment and its request.

    ECHO_TO=out.json python -m tests.echo_worker --request REQ.json --result RES.json   (writes no result)
"""
from __future__ import annotations

import json
import os
import sys

ECHO_ENV = "ECHO_TO"
MODULE = "tests.echo_worker"

if __name__ == "__main__":
    with open(os.environ[ECHO_ENV], "w") as f:
        request = sys.argv[sys.argv.index("--request") + 1]
        with open(request) as r:
            asked = json.load(r)
        json.dump({"request": asked, "env": dict(os.environ)}, f)
