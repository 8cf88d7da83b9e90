"""CLI sub-commands, one module each."""
