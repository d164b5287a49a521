"""Loads the fake kernel libraries (python/tests/fakes) under the real
libraries' module names, so that what they raise comes from "the
library's code" as the adapters tell it apart, without putting them in
sys.modules where a real library would be looked for."""

import importlib.util
import pathlib
import sys

FAKES = pathlib.Path(__file__).resolve().parent / "fakes"
if str(FAKES) not in sys.path:
    sys.path.insert(0, str(FAKES))  # their shared fake_attention_math


def load(file_stem, module_name):
    """A fresh fake (its CALLS empty), named module_name."""
    spec = importlib.util.spec_from_file_location(module_name, FAKES / f"{file_stem}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
