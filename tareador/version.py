"""The version of tareador, in one place below every module that writes or prints it."""

__version__ = "0.1.0"
