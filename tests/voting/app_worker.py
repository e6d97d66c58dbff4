"""One app process for the multi-process tests: Streamlit voting sessions (AppTest, the real page script and
the process's cached engine) casting votes against a shared store.

``python -m tests.voting.app_worker URL N VOTER=INVITE_CODE [...]`` runs one session per voter and, round-robin, has
each vote ``A`` then press Next ``N`` times; prints one JSON line: per voter the items whose vote the page
confirmed ("Vote saved"), the rounds where it said another tab had voted first, and any exception.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def main(url: str, n: int, voter_codes: list[str]) -> dict:
    os.environ["PREFLAB_DB"] = url
    os.environ.setdefault("PREFLAB_MIN_SECONDS", "0")
    codes = dict(vc.split("=", 1) for vc in voter_codes)
    sessions, out = {}, {v: {"confirmed": [], "duplicates": 0, "errors": []} for v in codes}
    for v, code in codes.items():
        at = AppTest.from_file(APP, default_timeout=120).run()
        at.text_input(key="invite_code").input(code)  # signed in by the voter's invite, as in a browser
        at.button[0].click().run()
        sessions[v] = at
    for _ in range(n):
        for v, at in sessions.items():
            rnd = at.session_state["round"] if "round" in at.session_state else None
            vote = [b for b in at.button if (b.key or "").startswith("vote_A-")]  # keyed by the round's id
            if not rnd or not vote:
                continue
            vote[0].click().run()
            if at.exception:
                out[v]["errors"].append(str(at.exception[0].value))
            if any("Vote saved" in s.value for s in at.success):
                out[v]["confirmed"].append(rnd.item_id)
                at.button(key="next").click().run()
            elif any("already voted" in t.value for t in at.toast):
                out[v]["duplicates"] += 1
    return out


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], int(sys.argv[2]), sys.argv[3:])), flush=True)
