"""Every frame the report computes from the shipped runs, written to one pickle, or compared with an earlier pickle:
the check that a change of the code's layout left the study's numbers as they were.

    python scripts/frames_snapshot.py write BEFORE.pkl     # at the old commit (e.g. in a git worktree)
    python scripts/frames_snapshot.py compare BEFORE.pkl   # at the new one: exit 1 and the names that differ

Frames of the public ``analysis`` functions taking the runs frame (and the skips), plus the answers per setup and
model (``answers.answers``), the ones the book prints.
"""
from __future__ import annotations

import inspect
import pickle
import sys

import pandas as pd


def snapshot() -> dict[str, object]:
    from academic_bench import analysis as a
    from academic_bench.predict.measured import answers

    df, skipped = a.runs_frame(), a.skipped_frame()
    out: dict[str, object] = {"runs_frame": df, "skipped_frame": skipped, "answers": answers(df, skipped)}
    for name in sorted(n for n in dir(a) if not n.startswith("_")):
        fn = getattr(a, name)
        if not inspect.isfunction(fn) or name in out or name == "runs_root":  # a path, where the tree is
            continue
        required = [p for p in inspect.signature(fn).parameters.values() if p.default is inspect.Parameter.empty]
        args = {("df",): (df,), ("df", "skipped"): (df, skipped), (): ()}.get(tuple(p.name for p in required))
        if args is None:
            continue
        try:
            out[name] = fn(*args)
        except Exception as exc:  # noqa: BLE001  (a function that fails must fail the same way after the change)
            out[name] = f"raised {type(exc).__name__}: {exc}"
    return out


def same(a: object, b: object) -> bool:
    if isinstance(a, pd.DataFrame) and isinstance(b, pd.DataFrame):
        try:
            pd.testing.assert_frame_equal(a, b, check_dtype=False)
            return True
        except AssertionError:
            return False
    return repr(a) == repr(b)


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("write", "compare"):
        print(__doc__, file=sys.stderr)
        return 2
    now = snapshot()
    if argv[0] == "write":
        with open(argv[1], "wb") as f:
            pickle.dump(now, f)
        print(f"{len(now)} frames written to {argv[1]}")
        return 0
    with open(argv[1], "rb") as f:
        before = pickle.load(f)
    differ = sorted(k for k in before.keys() | now.keys()
                    if k not in before or k not in now or not same(before[k], now[k]))
    print(f"{len(now)} frames compared with {len(before)}: " + ("identical" if not differ else f"differ: {differ}"))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
