from collections.abc import Iterator

import pytest

from intentref.suite.host.pytest_fixture import host_judge  # noqa: F401  (the fixture under test)


@pytest.fixture(scope="module")
def fork_socket() -> Iterator[str | None]:
    """One warm fork server for the judge runs of a test module (``host_support.judge_here``)."""
    from intentref.suite.host.judge import fork_server

    with fork_server() as socket:
        yield socket
