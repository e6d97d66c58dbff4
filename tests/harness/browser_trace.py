"""Self times from Chromium's traces and CPU profiles: the arithmetic of ``benchmarks/bench_app_browser.py``'s
profiler, kept with the tests' browser harness so the benchmarks use the tests' code and never the reverse."""

from __future__ import annotations

import collections


def self_times(events: list[dict]) -> dict[tuple[str, str], float]:
    """Self time (µs) of complete ("X") trace events by (thread name, event name): an event's duration less
    that of the events nested in it on the same thread."""
    threads, names = collections.defaultdict(list), {}
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            names[e["pid"], e["tid"]] = e["args"]["name"]
        elif e.get("ph") == "X" and "dur" in e:
            threads[e["pid"], e["tid"]].append((e["ts"], e["ts"] + e["dur"], e["name"]))
    out: dict = collections.defaultdict(float)
    for key, spans in threads.items():
        thread, stack = names.get(key, "?"), []
        for start, end, name in sorted(spans, key=lambda s: (s[0], -s[1])) + [(float("inf"), 0, "")]:
            while stack and stack[-1][1] <= start:
                done = stack.pop()
                out[thread, done[2]] += done[3]
            if stack:
                stack[-1][3] -= min(end, stack[-1][1]) - start
            stack.append([start, end, name, end - start])
    return out


def js_self(profile: dict) -> tuple[collections.Counter, collections.Counter]:
    """Sampled self time (µs) of a CDP ``Profiler`` profile by script file and by function."""
    nodes = {n["id"]: n["callFrame"] for n in profile["nodes"]}
    by_script, by_function = collections.Counter(), collections.Counter()
    deltas = profile["timeDeltas"][1:] + [0]
    for sample, dt in zip(profile["samples"], deltas, strict=True):
        frame = nodes[sample]
        script = frame["url"].rsplit("/", 1)[-1] or frame["functionName"] or "?"
        by_script[script] += dt
        by_function[f"{frame['functionName'] or '(anonymous)'} {script}:{frame['lineNumber']}"] += dt
    return by_script, by_function
