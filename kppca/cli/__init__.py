"""Command-line interface: ``kppca sample``, ``kppca traverse``, ``kppca fit`` (also ``python -m kppca``)."""

from .main import build_parser, main

__all__ = ["main", "build_parser"]
