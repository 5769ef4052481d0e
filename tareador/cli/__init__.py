"""Command-line interface: one module per subcommand, each with ``register(subparsers)``."""
