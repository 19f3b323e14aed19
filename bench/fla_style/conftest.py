"""An FLA-style gate for examples/rmsnorm-triton (bench/fla_style_walltime.sh): the candidate file
comes from $FLA_STYLE_CANDIDATE; ref.py is the example's reference."""
import importlib.util
import os
import pathlib

import pytest

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "rmsnorm-triton"


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="session")
def candidate():
    return _load(os.environ["FLA_STYLE_CANDIDATE"], "candidate")


@pytest.fixture(scope="session")
def ref():
    return _load(EXAMPLE / "ref.py", "ref")
