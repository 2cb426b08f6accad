"""Imports the modules that add sub-commands to the CLI (each calls ``cli._EXTRA_COMMANDS.append``)."""
