"""ChunkStore is one class assembled from a module per concern (core/store_*.py, mixed in).

The parts must not overlap (a method defined in two would silently shadow the other), the
names callers import from core.store must be the parts' own objects, and each part's examples
must hold.
"""
import doctest
import importlib

import pytest

from chunkwise.core import store

PARTS = ["chunkwise.core.store", "chunkwise.core.store_records", "chunkwise.core.store_schema", "chunkwise.core.store_crypto",
         "chunkwise.core.store_encodings", "chunkwise.core.store_stats", "chunkwise.core.store_knn"]


def test_each_method_is_defined_in_one_part_only():
    owner: dict[str, str] = {}
    clashes = []
    for cls in store.ChunkStore.__mro__[:-1]:            # ChunkStore, then its mixins (not object)
        for name in vars(cls):
            if name.startswith("__") and name not in ("__init__", "__enter__", "__exit__"):
                continue
            if name in owner:
                clashes.append(f"{name}: {owner[name]} and {cls.__name__}")
            owner[name] = cls.__name__
    assert clashes == []
    assert {"add_chunk", "pending_encodings", "model_stats", "knn_data", "encryption"} <= set(owner)


def test_core_store_names_are_the_parts_own():
    from chunkwise.core import store_records, store_schema

    for name in store.__all__:
        assert hasattr(store, name), name
    assert store.Chunk is store_records.Chunk and store.validate_chunk is store_records.validate_chunk
    assert store.MIGRATIONS is store_schema.MIGRATIONS and store.SCHEMA_VERSION == len(store.MIGRATIONS)


@pytest.mark.parametrize("name", PARTS)
def test_the_examples_in_each_part_hold(name):
    result = doctest.testmod(importlib.import_module(name))
    assert result.failed == 0
