"""The pytest plugin at its published path: ``intentref.conformance.pytest_plugin``.

pytest registers this module (entry point ``intentref`` and ``-p``); the hooks and the
fixtures are those of ``intentref.suite.pytest_plugin``, re-exported by name
(the executor fixture too, which a star import would leave out), so that this one module
object is the plugin whichever way it was named.
"""

from __future__ import annotations

from intentref.suite.pytest_plugin import (
    _intentref_executor,
    intentref_target,
    pytest_addoption,
    pytest_collection_modifyitems,
    pytest_configure,
)

__all__ = [
    "_intentref_executor",
    "intentref_target",
    "pytest_addoption",
    "pytest_collection_modifyitems",
    "pytest_configure",
]
