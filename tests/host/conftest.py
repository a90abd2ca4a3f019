from intentref.suite.host.pytest_fixture import host_judge  # noqa: F401  (the fixture under test)
from tests.host.host_support import warm_fork_server  # noqa: F401  (the fixture fork_socket)
