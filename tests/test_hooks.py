"""The hook stack (s4tf/hooks.py): who hears the package's events."""

import threading

from s4tf import hooks


def test_nobody_listens_by_default():
    assert all(getattr(hooks, kind) is None for kind in hooks.KINDS)


def test_the_innermost_listener_hears_and_the_outer_one_again_after_it_leaves():
    heard = []
    outer = hooks.Listener("outer", on_barrier=lambda: heard.append("outer"))
    inner = hooks.Listener("inner", on_barrier=lambda: heard.append("inner"))
    with hooks.listening(outer):
        with hooks.listening(inner):
            hooks.on_barrier()
        hooks.on_barrier()
    assert heard == ["inner", "outer"] and hooks.on_barrier is None


def test_a_listener_for_one_thread_is_not_heard_from_another():
    heard = []
    elsewhere = threading.Thread(target=lambda: None)
    elsewhere.start()
    elsewhere.join()
    listener = hooks.Listener("summary", on_draw=lambda t, redraw: heard.append(t),
                              thread=elsewhere.ident)
    with hooks.listening(listener):
        hooks.on_draw("drawn here", None)
        assert not hooks.installed("summary")
    assert heard == []
