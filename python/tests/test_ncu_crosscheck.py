import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))

import ncu_crosscheck as nc  # noqa: E402

NCU_CSV = """==PROF== Connected to process 1234
==PROF== Profiling "attn_fwd_fp16_d64": 0%....50%....100% - 1 pass
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","1234","flashcore-backend-cuda-v8","127.0.0.1","attn_fwd_fp16_d64","1","7","(128, 1, 1)","(11, 8, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","usecond","12.10"
"1","1234","flashcore-backend-cuda-v8","127.0.0.1","spin_kernel","1","7","(1, 1, 1)","(1, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","usecond","100.00"
"2","1234","flashcore-backend-cuda-v8","127.0.0.1","attn_fwd_fp16_d64","1","7","(128, 1, 1)","(11, 8, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","nsecond","11,900"
"""


def test_parse_keeps_only_matching_kernels_in_ns():
    assert nc.parse_ncu_csv(NCU_CSV, r"^attn_") == [12100.0, 11900.0]


def test_parse_without_header_is_empty():
    assert nc.parse_ncu_csv("==PROF== nothing profiled\n", "attn") == []


def test_agree_uses_five_percent_or_one_microsecond():
    assert nc.agree(104_000, 100_000)
    assert not nc.agree(106_000, 100_000)
    assert nc.agree(8_900, 8_000)  # 11% apart but within 1 us
    assert not nc.agree(9_100, 8_000)


def test_flashcore_median_picks_row_and_mode():
    results = {"results": [
        {"backend": "cuda-v8", "label": "cuda-v8", "case_id": "c1",
         "timings": [{"l2": "hot", "kernel": {"median_ns": 5000}}, {"l2": "cold", "kernel": {"median_ns": 7000}}]},
    ]}
    assert nc.flashcore_median_ns(results, "cuda-v8", None, "c1", "cold") == 7000
    try:
        nc.flashcore_median_ns(results, "cuda-v8", None, "c2", "hot")
    except LookupError:
        pass
    else:
        raise AssertionError("expected LookupError")
