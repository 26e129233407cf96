"""ChatSession runs every load and turn on its one compute thread, whichever worker thread asks: Textual's thread
workers come from a pool, and llama.cpp work spread over several threads slows every step (runtime/compute_thread.py).
"""

from __future__ import annotations

import threading

from tests.hub_server import home  # noqa: F401  (fixture: an empty LOCALSPEC_HOME)


def test_loads_and_turns_asked_from_different_threads_run_on_one(home, tiny_target, tmp_path, monkeypatch):  # noqa: F811
    import localspec.agent.backend as launch_open  # where the session opens its pair
    from localspec.launch.flags import RunFlags
    from localspec.tui.launch_options import AppOptions
    from localspec.tui.session import ChatSession

    real_open, loaded_on = launch_open.open_engine, []

    def open_engine(*args, **kwargs):
        loaded_on.append(threading.current_thread())
        return real_open(*args, **kwargs)

    monkeypatch.setattr(launch_open, "open_engine", open_engine)
    flags = RunFlags(target=str(tiny_target), no_draft=True, threads=1, ctx_size=2048, max_tokens=4)
    session = ChatSession(AppOptions(flags=flags, workspace=tmp_path, tool_choice="none", record=False))
    posted_on = []
    try:
        for _ in range(2):  # a load, then a reload, each from a fresh worker thread
            worker = threading.Thread(target=session.load, args=(session.initial_selection(),))
            worker.start()
            worker.join(60)
        worker = threading.Thread(target=session.run_turn,
                                  args=("hi", lambda ev: posted_on.append(threading.current_thread()),
                                        threading.Event()))
        worker.start()
        worker.join(60)
    finally:
        session.shutdown()
    assert len(loaded_on) == 2 and posted_on and {*loaded_on, *posted_on} == {loaded_on[0]}
    assert loaded_on[0].name == "localspec-engine"
