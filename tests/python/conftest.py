import os

# The disk cache is per user and survives processes: tests that count compiles must not find
# entries an earlier test (or the developer's own runs) left. Cache tests pass their own
# NEURON_CACHE_DIR to the processes they start.
os.environ["NEURON_CACHE_DIR"] = "off"


def pytest_addoption(parser):
    parser.addoption("--full", action="store_true", default=False,
                     help="run the full (slow) variants of the test suites, e.g. the whole OpInfo registry")
