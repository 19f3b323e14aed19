"""Shared by the worker's tests: every temporary directory a test makes through tempfile's
default place lies under one directory for the session, removed when the session ends, so a run
leaves nothing behind in the system's temporary directory. Processes the tests start use their
own (TMPDIR); the worker removes what it makes there."""
import shutil
import tempfile

_ROOT = tempfile.mkdtemp(prefix="kloop-pytest-")
tempfile.tempdir = _ROOT


def pytest_sessionfinish(session, exitstatus):
    tempfile.tempdir = None
    shutil.rmtree(_ROOT, ignore_errors=True)
