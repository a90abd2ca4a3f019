from intentref.suite.host.pytest_fixture import host_judge  # noqa: F401  (the fixture under test)
