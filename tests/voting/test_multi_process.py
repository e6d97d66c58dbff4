"""Two app processes on one PostgreSQL, voters on both (one voter in both at once, like two tabs on two
servers behind a load balancer): no vote lost, no item given twice to a voter, no error shown."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.voting.conftest import tiny_items
from voting.items import load_items
from voting.store import import_items, load_votes, open_store, vote_tallies

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.postgres


def test_two_app_processes_share_one_postgresql(pg_clean_url):
    engine = open_store(pg_clean_url)
    import_items(engine, load_items(tiny_items(8)), "tiny")
    env = {**os.environ, "PREFLAB_STRATEGY": "balanced", "PYTHONPATH": str(ROOT)}
    from voting.access import issue_invite

    codes = {v: issue_invite(engine, v) for v in ("p0-a", "p0-b", "p1-a", "p1-b", "both")}  # one invite each
    procs = [subprocess.Popen([sys.executable, "-m", "tests.voting.app_worker", pg_clean_url, "5",
                               *(f"{v}={codes[v]}" for v in voters)],
                              cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for voters in (["p0-a", "p0-b", "both"], ["p1-a", "p1-b", "both"])]
    results = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=600)
        assert p.returncode == 0, stderr[-3000:]
        results.append(json.loads(stdout.strip().splitlines()[-1]))
    votes = load_votes(engine)
    assert not [e for r in results for v in r.values() for e in v["errors"]]
    for voter in ("p0-a", "p0-b", "p1-a", "p1-b", "both"):
        confirmed = [i for r in results for i in r.get(voter, {}).get("confirmed", [])]
        stored = votes.loc[votes["voter"] == voter, "item_id"].tolist()
        assert sorted(confirmed) == sorted(stored), voter  # every confirmed vote stored, nothing else
        assert len(set(stored)) == len(stored), f"{voter} was given an item twice"
    assert len(votes) == sum(len(v["confirmed"]) for r in results for v in r.values()) >= 20
    assert int(vote_tallies(engine, "tiny")["n"].sum()) == len(votes)  # counts kept across processes
