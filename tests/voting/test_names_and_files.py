"""What the app shows and opens: images in model output as labelled links, names as plain text, names free
of invisible characters (NFC), data-folder listings that stay inside the folder, server-issued guest ids."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from tests.voting.conftest import tiny_items
from tests.voting.test_vote_page import APP, login, start
from voting.items import ItemDataError, invisible_chars, load_items
from voting.pages.pair_html import markdown_html
from voting.store import import_items, list_datasets, open_store

IMAGES = ("![cat](http://t.invalid/a.png) ![ref][r] ![](//cdn.invalid/x.gif)\n\n[r]: https://t.invalid/r.png\n\n"
          "| a | b |\n|---|---|\n| ![dog](http://t.invalid/d.png) | x |")


def test_images_in_model_output_are_labelled_links_never_fetched():
    out = markdown_html(IMAGES)
    assert "<img" not in out and "src=" not in out
    for label, href in (("cat", "http://t.invalid/a.png"), ("no description", "//cdn.invalid/x.gif"),
                        ("ref", "https://t.invalid/r.png"), ("dog", "http://t.invalid/d.png")):
        assert (f'<a class="pf-image" href="{href}" rel="noopener noreferrer nofollow">[image: {label}]</a>'
                in out), (label, out)
    assert "[image: x&lt;script&gt;]" in markdown_html("![x<script>](http://t.invalid/a.png)")


def test_the_voter_name_is_plain_text_in_the_sidebar(monkeypatch, seeded_url):
    at = login(start(monkeypatch, seeded_url), "![x](http://names.invalid/beacon)")
    assert [t.value for t in at.sidebar.text] == ["Voting as ![x](http://names.invalid/beacon)"]
    assert not [m for m in at.sidebar.markdown if "names.invalid" in m.value]


BAD = {"U+3164": "\u3164", "U+2800": "\u2800", "U+115F": "\u115f", "U+FFA0": "\uffa0", "U+034F": "\u034f",
       "U+FE0F": "\ufe0f", "U+E0100": "\U000e0100", "U+17B4": "\u17b4", "U+0000": "\x00", "U+001B": "\x1b",
       "U+000D": "\r", "U+0009": "\t", "U+2028": "\u2028", "U+00A0": "\u00a0"}


@pytest.mark.parametrize("code", BAD)
def test_names_with_invisible_or_control_characters_are_refused(code, tmp_path, capsys):
    df = tiny_items(2)
    df.loc[df["model"] == "quokka-13b", "model"] = "quokka" + BAD[code] + "13b"
    with pytest.raises(ItemDataError, match=code.replace("+", r"\+")):
        load_items(df)
    path = tmp_path / "items.jsonl"
    df.to_json(path, orient="records", lines=True)
    from preflab_cli import main

    with pytest.raises(SystemExit) as e:  # `preflab import`: exit status 2 and one line naming file and line
        main(["import", str(path), "--dataset", "d", "--db", f"sqlite:///{tmp_path / 'v.db'}"])
    said = " ".join(capsys.readouterr().err.split())
    assert e.value.code == 2 and code in said and "line 2: field 'model'" in said, said


def test_names_are_stored_in_nfc_and_ordinary_names_pass(sqlite_url):
    assert invisible_chars("gpt-4o (2024-05) ünïcode 模型 🙂") == []
    df = tiny_items(2)
    df["model"] = df["model"].replace("quokka-13b", "que\u0301bec")  # e + combining acute
    items = load_items(df)
    assert "qu\u00e9bec" in items.models
    engine = open_store(sqlite_url)
    import_items(engine, items, "cafe\u0301")
    assert list_datasets(engine) == ["caf\u00e9"]
    with pytest.raises(ItemDataError, match=r"U\+3164"):
        import_items(engine, items, "demo\u3164")


def test_the_calibration_list_does_not_follow_links_out_of_the_data_folder(monkeypatch, seeded_url, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "judge-verdicts.jsonl").write_text("")
    (data / "evil-verdicts.jsonl").symlink_to("/etc/passwd")
    (data / "sub").symlink_to("/etc", target_is_directory=True)
    at = start(monkeypatch, seeded_url, data_dir=str(data))
    at.switch_page("voting/pages/calibration.py").run()
    options = at.selectbox(key="cal_pick").options
    assert options == ["(type a path)", str(data / "judge-verdicts.jsonl")], options


def test_a_guest_token_the_server_did_not_issue_is_refused(monkeypatch, seeded_url):
    monkeypatch.setenv("PREFLAB_DB", seeded_url)
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["guest"] = "madeupmadeupmadeup1234"
    at.run()
    assert "voter" not in at.session_state and at.button[0].label == "Start voting"
    at.button[0].click().run()  # the server issues one
    token = at.query_params["guest"]
    token = token[0] if isinstance(token, list) else token
    assert token != "madeupmadeupmadeup1234" and at.session_state["voter"].startswith("guest-")
    again = AppTest.from_file(APP, default_timeout=60)
    again.query_params["guest"] = token
    again.run()
    assert again.session_state["voter"] == at.session_state["voter"]
