"""The examples in core/'s docstrings still hold: each module's doctests run here.

Docstrings open with an example where it helps (``written_words("I'm now — at Mobile:")``,
``split_pieces``, ``repeat_head``...); an example the code has moved away from misleads the reader
more than none.  Examples that need the model or a store are marked ``+SKIP`` where they are written.
(Catches: a docstring example whose output the code no longer gives.)
"""
import doctest
import importlib
import pkgutil

import pytest

import chunkwise.core as core

MODULES = sorted(m.name for m in pkgutil.iter_modules(core.__path__) if not m.name.startswith("_"))


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_hold(name):
    module = importlib.import_module(f"chunkwise.core.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} docstring example(s) of core/{name}.py no longer hold"
