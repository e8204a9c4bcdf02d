"""What a Python module defines, read from its source without importing it (a user's module
imports Keras, which only a worker may do)."""
from __future__ import annotations

import ast
import os
import sys
from importlib.machinery import PathFinder

__all__ = ["find_module", "defined_names"]


def defined_names(source):
    """Top-level names of module `source` (text); None when unknowable. Raises SyntaxError
    and ValueError for text that is not Python."""
    return _top_level_names(ast.parse(source).body)


def find_module(module):
    """The import spec of a dotted module name, searched as `python -m` would (the current
    directory first, then sys.path); None when it does not exist."""
    path = [os.getcwd()] + sys.path
    parts = module.split(".")
    spec = None
    for i in range(len(parts)):
        spec = PathFinder.find_spec(".".join(parts[:i + 1]), path)
        if spec is None:
            return None
        path = list(spec.submodule_search_locations or [])
    return spec


def _top_level_names(body):
    """Names a module body defines (also under if/try/with); None when unknowable
    (`import *`, a module __getattr__)."""
    names = set()
    for node in body:
        if isinstance(node, (ast.If, ast.Try, ast.With)):
            inner = _top_level_names(node.body + getattr(node, "orelse", [])
                                     + getattr(node, "finalbody", [])
                                     + [s for h in getattr(node, "handlers", []) for s in h.body])
            if inner is None:
                return None
            names |= inner
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            if any(a.name == "*" for a in node.names):
                return None
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    return None if "__getattr__" in names else names
