"""Imports the modules that add sub-commands to the CLI (each calls ``cli._EXTRA_COMMANDS.append``)."""
from . import cost_cli  # noqa: F401,E402  (cost, plan)
from . import estimate_cli  # noqa: F401,E402  (estimate)
from . import bench_cli  # noqa: F401,E402  (bench, sweep, export)
from . import notebook_cli  # noqa: F401,E402  (notebook, runs-readme)
