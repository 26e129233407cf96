"""ComputeThread: every call runs on one thread, whoever calls; results and errors come back to the caller."""

from __future__ import annotations

import threading

import pytest

from localspec.runtime.compute_thread import ComputeThread


def test_calls_from_many_threads_run_on_one_thread():
    compute, seen = ComputeThread("t"), []

    def ask():
        seen.append(compute.call(lambda: threading.get_ident()))

    callers = [threading.Thread(target=ask) for _ in range(4)]
    for t in callers:
        t.start()
    for t in callers:
        t.join(10)
    ask()
    assert len(seen) == 5 and len(set(seen)) == 1 and seen[0] != threading.get_ident()
    compute.close()


def test_results_errors_and_nested_calls_reach_the_caller():
    compute = ComputeThread("t")
    assert compute.call(lambda a, b=0: a + b, 2, b=3) == 5
    with pytest.raises(ValueError, match="bad"):
        compute.call(lambda: (_ for _ in ()).throw(ValueError("bad")))
    outer = compute.call(lambda: (threading.get_ident(), compute.call(threading.get_ident)))
    assert outer[0] == outer[1]  # a call from the compute thread runs in place instead of waiting for itself
    compute.close()


def test_close_ends_the_thread_and_a_later_call_starts_another():
    compute = ComputeThread("t")
    first = compute.call(threading.current_thread)
    compute.close()
    first.join(10)
    assert not first.is_alive() and first.daemon
    second = compute.call(threading.current_thread)
    assert second is not first and second.is_alive()
    compute.close()
