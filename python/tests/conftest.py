"""Puts the bridge's shared worker core and the plugins' backend modules on
sys.path, as the Go bridge does when it writes them into one directory,
and the bridge's test fixtures (its probe backend)."""

import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
for folder in ("internal/bridge/python", "internal/bridge/testdata", "plugins/pytorch-sdpa", "plugins/triton"):
    sys.path.insert(0, str(ROOT / folder))
