def pytest_addoption(parser):
    parser.addoption("--full", action="store_true", default=False,
                     help="run the full (slow) variants of the test suites, e.g. the whole OpInfo registry")
