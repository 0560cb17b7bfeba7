"""The collector policy of long-running processes (stream_lsh.gc_policy), checked in a fresh interpreter
so that the test process keeps its own settings."""

from __future__ import annotations

import subprocess
import sys


def test_tune_gc_freezes_start_up_and_raises_the_thresholds():
    code = (
        "import gc; from stream_lsh.gc_policy import GC_THRESHOLDS, tune_gc; tune_gc(); "
        "assert gc.get_threshold() == GC_THRESHOLDS, gc.get_threshold(); "
        "assert gc.get_freeze_count() > 1000, gc.get_freeze_count(); print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "ok", out.stderr
