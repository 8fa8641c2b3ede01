"""Imports tigramite's CMIknn for the benchmark scripts (tigramite.py, cmiknn-dist.py).

tigramite is imported from $TIGRAMITE_PATH (a --no-deps install of the wheel: its files unpacked);
numba, which it imports only for @jit(forceobj=True) (object mode, nothing compiled), is replaced
by a stand-in when absent.
"""
import os
import sys
import types


def import_cmiknn():
    path = os.environ.get("TIGRAMITE_PATH", "/tmp/tig")
    if path not in sys.path:
        sys.path.insert(0, path)
    try:
        import numba  # noqa: F401
    except ImportError:
        stub = types.ModuleType("numba")
        stub.jit = lambda *a, **k: (lambda f: f)
        sys.modules["numba"] = stub
    from tigramite.independence_tests.cmiknn import CMIknn
    return CMIknn
