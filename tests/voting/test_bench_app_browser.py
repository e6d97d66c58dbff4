"""The browser profiler's arithmetic (tests/harness/browser_trace.py) on hand-made traces and profiles."""

from __future__ import annotations

from tests.harness.browser_trace import js_self, self_times


def test_self_time_takes_nested_events_out():
    events = [{"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "CrRendererMain"}},
              {"ph": "X", "name": "RunTask", "pid": 1, "tid": 2, "ts": 0, "dur": 100},
              {"ph": "X", "name": "FunctionCall", "pid": 1, "tid": 2, "ts": 10, "dur": 50},
              {"ph": "X", "name": "Layout", "pid": 1, "tid": 2, "ts": 20, "dur": 15},  # inside FunctionCall
              {"ph": "X", "name": "Paint", "pid": 1, "tid": 2, "ts": 70, "dur": 20},
              {"ph": "X", "name": "Paint", "pid": 1, "tid": 3, "ts": 0, "dur": 7},  # another, unnamed thread
              {"ph": "B", "name": "ignored", "pid": 1, "tid": 2, "ts": 0}]
    got = self_times(events)
    assert got == {("CrRendererMain", "RunTask"): 30, ("CrRendererMain", "FunctionCall"): 35,
                   ("CrRendererMain", "Layout"): 15, ("CrRendererMain", "Paint"): 20, ("?", "Paint"): 7}
    assert sum(got.values()) == 100 + 7  # self times add up to the outer events' time


def test_js_self_time_by_script_and_function():
    frame = {"functionName": "", "url": "", "lineNumber": -1}
    profile = {"nodes": [{"id": 1, "callFrame": {**frame, "functionName": "(root)"}},
                         {"id": 2, "callFrame": {"functionName": "render", "url": "http://x/js/react.js",
                                                 "lineNumber": 7}},
                         {"id": 3, "callFrame": {**frame, "functionName": "(program)"}}],
               "samples": [2, 2, 3, 1], "timeDeltas": [0, 100, 200, 300]}
    by_script, by_function = js_self(profile)  # a sample lasts until the next one
    assert by_script == {"react.js": 300, "(program)": 300, "(root)": 0}
    assert by_function["render react.js:7"] == 300
