"""The command line as a user runs it: generated data in, decisions, rejects and exit codes out."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from stream_lsh.cli import cli
from stream_lsh.core.config import DedupConfig


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    folder = tmp_path_factory.mktemp("corpus")
    result = CliRunner().invoke(
        cli,
        [
            "generate",
            "--pages",
            "600",
            "--seed",
            "3",
            "-o",
            str(folder / "pages.jsonl"),
            "--labels",
            str(folder / "labels.json"),
        ],
    )
    assert result.exit_code == 0, result.output
    return folder


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_dedup_writes_one_decision_per_page_in_input_order(corpus, tmp_path):
    out = tmp_path / "decisions.jsonl"
    uniques = tmp_path / "unique.jsonl"
    result = CliRunner().invoke(
        cli, ["dedup", str(corpus / "pages.jsonl"), "-o", str(out), "--unique-out", str(uniques)]
    )
    assert result.exit_code == 0, result.output
    pages = read_jsonl(corpus / "pages.jsonl")
    decisions = read_jsonl(out)
    assert [d["id"] for d in decisions] == [p["id"] for p in pages]
    assert set(decisions[0]) == {
        "id",
        "status",
        "cluster_id",
        "duplicate_of",
        "similarity",
        "candidates",
        "match",
        "containment",
    }
    statuses = {d["status"] for d in decisions}
    assert statuses == {"unique", "duplicate", "no_content"}
    kept = [d["id"] for d in decisions if d["status"] == "unique" or d.get("fuller")]
    assert any(d.get("fuller") for d in decisions)  # a story that came after its teaser is kept too
    assert [p["id"] for p in read_jsonl(uniques)] == kept
    assert "pages 600 |" in result.stderr and "pages/s" in result.stderr
    for d in decisions:
        if d["status"] == "duplicate":
            assert d["cluster_id"] is not None and d["duplicate_of"] is not None
            assert d["similarity"] >= 0.3 if d["match"] == "jaccard" else d["containment"] >= 0.7


def test_bad_lines_go_to_rejects_and_the_run_goes_on(corpus, tmp_path):
    good = (corpus / "pages.jsonl").read_bytes().splitlines()[:20]
    bad = [
        b"not json",
        b'{"text": "no id"}',
        b"\xff\xfe",
        b'{"id": "e", "text": 5}',
        b"[1, 2]",
        b'{"id": "big", "text": "' + b"x" * 300_000 + b'"}',
    ]
    source = tmp_path / "mixed.jsonl"
    source.write_bytes(b"\n".join(good[:10] + bad + good[10:]) + b"\n")
    rejects = tmp_path / "rejects.jsonl"
    result = CliRunner().invoke(
        cli,
        [
            "dedup",
            str(source),
            "-o",
            str(tmp_path / "d.jsonl"),
            "--rejects",
            str(rejects),
            "--max-page-bytes",
            "200000",
        ],
    )
    assert result.exit_code == 1
    assert len(read_jsonl(tmp_path / "d.jsonl")) == 20
    rejected = read_jsonl(rejects)
    assert [r["line"] for r in rejected] == list(range(11, 17))
    assert [r["code"] for r in rejected] == [
        "invalid_json",
        "missing_id",
        "invalid_utf8",
        "bad_field",
        "not_an_object",
        "too_large",
    ]
    assert all(r["reason"] and r["raw"] for r in rejected)
    assert "6 line(s) rejected" in result.stderr


def test_a_byte_order_mark_and_crlf_do_not_cost_a_page(tmp_path):
    source = tmp_path / "bom.jsonl"
    source.write_bytes(
        b'\xef\xbb\xbf{"id": "a", "text": "the cat sat on the mat and the dog sat on the rug"}\r\n'
        b'{"id": "b", "text": "the cat sat on the mat and the dog sat on the rug"}'
    )
    result = CliRunner().invoke(cli, ["dedup", str(source), "-o", str(tmp_path / "d.jsonl")])
    assert result.exit_code == 0, result.output
    assert [d["status"] for d in read_jsonl(tmp_path / "d.jsonl")] == ["unique", "duplicate"]


def test_unique_out_holds_each_unique_page_once_even_when_redelivered(corpus, tmp_path):
    lines = (corpus / "pages.jsonl").read_bytes().splitlines(keepends=True)[:50]
    source = tmp_path / "twice.jsonl"
    source.write_bytes(b"".join(lines + lines))
    uniques = tmp_path / "u.jsonl"
    result = CliRunner().invoke(
        cli, ["dedup", str(source), "-o", str(tmp_path / "d.jsonl"), "--unique-out", str(uniques)]
    )
    assert result.exit_code == 0
    decisions = read_jsonl(tmp_path / "d.jsonl")
    assert decisions[:50] == decisions[50:]  # a redelivered page gets its decision again
    assert len(read_jsonl(uniques)) == sum(d["status"] == "unique" for d in decisions[:50])


def test_no_rejects_file_when_nothing_is_rejected(corpus, tmp_path):
    rejects = tmp_path / "rejects.jsonl"
    result = CliRunner().invoke(
        cli,
        ["dedup", str(corpus / "pages.jsonl"), "-o", str(tmp_path / "d.jsonl"), "--rejects", str(rejects)],
    )
    assert result.exit_code == 0 and not rejects.exists()


def test_stdin_to_stdout_through_the_installed_command(corpus):
    pages = (corpus / "pages.jsonl").read_bytes()
    done = subprocess.run(
        ["stream-lsh", "dedup", "-"],
        input=pages,
        capture_output=True,
        check=True,
        env={**os.environ, "STREAM_LSH_THRESHOLD": "0.4"},
    )
    decisions = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(decisions) == 600
    assert b"pages 600" in done.stderr


def test_environment_and_flags_configure_the_engine(corpus, tmp_path):
    def duplicates(*args, env=None):
        out = tmp_path / "d.jsonl"
        result = CliRunner(env=env).invoke(cli, ["dedup", str(corpus / "pages.jsonl"), "-o", str(out), *args])
        assert result.exit_code == 0, result.output
        return sum(d["status"] == "duplicate" for d in read_jsonl(out))

    strict = duplicates(env={"STREAM_LSH_THRESHOLD": "0.9"})
    assert strict < duplicates("--threshold", "0.3")
    assert duplicates("--threshold", "0.9", env={"STREAM_LSH_THRESHOLD": "0.3"}) == strict  # flag wins


def test_invalid_settings_fail_at_start_with_a_clear_message(corpus):
    result = CliRunner(env={"STREAM_LSH_NUM_PERM": "lots"}).invoke(
        cli, ["dedup", str(corpus / "pages.jsonl")]
    )
    assert result.exit_code == 2 and "STREAM_LSH_NUM_PERM='lots'" in result.output
    result = CliRunner().invoke(cli, ["dedup", str(corpus / "pages.jsonl"), "--bands", "50", "--rows", "5"])
    assert result.exit_code == 2 and "exceeds the signature length" in result.output


def test_kafka_flags_take_what_their_variables_take():
    """The stream commands' flags for limits, codec and waits: read as their STREAM_LSH_* variables
    are (any case, ``none``), and refused with the setting's own message."""

    def topics(*args):
        return CliRunner().invoke(cli, ["topics", "--dry-run", "--broker", "kafka:9092", *args])

    result = topics("--max-message-bytes", "8388608", "--replication-factor", "1")
    assert result.exit_code == 0, result.output
    limits = {json.loads(line)["config"]["max.message.bytes"] for line in result.output.splitlines()}
    assert limits == {"8388608"}
    refused = topics("--max-message-bytes", "4096")
    assert refused.exit_code == 2 and "max_message_bytes must be at least 65536" in refused.output

    def worker(*args):  # refused before it connects to anything
        return CliRunner().invoke(cli, ["worker", "--broker", "kafka:9092", "--send-timeout-s", "0", *args])

    assert (
        "send_timeout_s must be positive" in worker("--compression", "ZSTD", "--broker-wait-s", "none").output
    )
    assert worker("--broker-wait-s", "soon").exit_code == 2
    assert "choose one of none, gzip" in worker("--compression", "brotli").output or (
        "brotli" in worker("--compression", "brotli").output
    )


def test_state_continues_across_runs_and_refuses_another_scheme(corpus, tmp_path):
    lines = (corpus / "pages.jsonl").read_bytes().splitlines(keepends=True)
    (tmp_path / "a.jsonl").write_bytes(b"".join(lines[:300]))
    (tmp_path / "b.jsonl").write_bytes(b"".join(lines[300:]))
    state = tmp_path / "state.npz"
    runner = CliRunner()
    for part in "ab":
        result = runner.invoke(
            cli,
            [
                "dedup",
                str(tmp_path / f"{part}.jsonl"),
                "-o",
                str(tmp_path / f"{part}.out"),
                "--state",
                str(state),
            ],
        )
        assert result.exit_code == 0, result.output
    whole = runner.invoke(cli, ["dedup", str(corpus / "pages.jsonl"), "-o", str(tmp_path / "whole.out")])
    assert whole.exit_code == 0
    assert read_jsonl(tmp_path / "a.out") + read_jsonl(tmp_path / "b.out") == read_jsonl(
        tmp_path / "whole.out"
    )
    other = runner.invoke(cli, ["dedup", str(tmp_path / "b.jsonl"), "--state", str(state), "--seed", "9"])
    assert other.exit_code == 2 and "signature scheme" in other.output and "seed" in other.output
    nowhere = runner.invoke(
        cli, ["dedup", str(tmp_path / "b.jsonl"), "--state", str(tmp_path / "no" / "s.npz")]
    )
    assert nowhere.exit_code == 2 and "not a writable directory" in nowhere.output


def test_eval_scores_against_labels(corpus):
    result = CliRunner().invoke(
        cli, ["eval", str(corpus / "pages.jsonl"), str(corpus / "labels.json"), "--json"]
    )
    assert result.exit_code == 0, result.output
    scores = json.loads(result.stdout.splitlines()[0])
    assert scores["pages"] == 600 and 0.0 < scores["f1"] <= 1.0
    worse = CliRunner().invoke(
        cli, ["eval", str(corpus / "pages.jsonl"), str(corpus / "labels.json"), "--json", "--no-boilerplate"]
    )
    assert json.loads(worse.stdout.splitlines()[0])["f1"] < scores["f1"]


def test_eval_scores_a_decisions_file(corpus, tmp_path):
    decisions = tmp_path / "decisions.jsonl"
    assert (
        CliRunner().invoke(cli, ["dedup", str(corpus / "pages.jsonl"), "-o", str(decisions)]).exit_code == 0
    )
    args = ["eval", str(corpus / "pages.jsonl"), str(corpus / "labels.json"), "--json"]
    ran = json.loads(CliRunner().invoke(cli, args).stdout.splitlines()[0])
    scored = json.loads(
        CliRunner().invoke(cli, [*args, "--decisions", str(decisions)]).stdout.splitlines()[0]
    )
    assert scored["f1"] == ran["f1"] and scored["pages"] == 600
    records = [json.loads(line) for line in decisions.read_text().splitlines()]
    decisions.write_text("\n".join(json.dumps({**r, "cluster_id": r["id"]}) for r in records))  # all apart
    wrong = json.loads(CliRunner().invoke(cli, [*args, "--decisions", str(decisions)]).stdout.splitlines()[0])
    assert wrong["f1"] < ran["f1"]


def test_tune_prints_the_banding_the_engine_uses_and_the_s_curve():
    """tune reads the same settings as the engine: its bands are the engine's (43 x 2 with the
    default containment, whose reach is a quarter-size teaser), not the Jaccard threshold's alone."""
    default = CliRunner().invoke(cli, ["tune"])
    assert default.exit_code == 0, default.output
    banding = DedupConfig().banding()
    assert f"bands b = {banding.bands}, rows r = {banding.rows}" in default.output
    assert (banding.bands, banding.rows) == (43, 2)
    jaccard_only = CliRunner().invoke(cli, ["tune", "--threshold", "0.3", "--containment", "none"])
    assert "containment none" in jaccard_only.output and "bands b = 36, rows r = 3" in jaccard_only.output
    from_environment = CliRunner(env={"STREAM_LSH_CONTAINMENT": "none"}).invoke(cli, ["tune"])
    assert "bands b = 36, rows r = 3" in from_environment.output
    result = CliRunner().invoke(cli, ["tune", "--threshold", "0.5", "--num-perm", "100"])
    rows = [line.split() for line in result.output.splitlines() if line.strip()[:1].isdigit()]
    probabilities = [float(r[1]) for r in rows]
    assert probabilities == sorted(probabilities) and len(rows) >= 15
    assert CliRunner().invoke(cli, ["tune", "--threshold", "1.5"]).exit_code == 2


def test_generate_is_reproducible(tmp_path):
    runner = CliRunner()
    for name in "ab":
        runner.invoke(
            cli,
            [
                "generate",
                "--pages",
                "50",
                "--seed",
                "4",
                "-o",
                str(tmp_path / f"{name}.jsonl"),
                "--labels",
                str(tmp_path / f"{name}.json"),
            ],
        )
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()


@pytest.mark.parametrize(
    ("args", "env", "says"),
    [
        (["--alerts", "a.jsonl"], {}, "--alerts needs --until-idle"),
        (
            ["--until-idle", "--alerts", "a.jsonl"],
            {"STREAM_LSH_ORDER": "arrival"},
            "--alerts needs clock order",
        ),
        (
            ["--until-idle", "--alerts", "a.jsonl"],
            {"STREAM_LSH_STATUS_INTERVAL_S": "0"},
            "--alerts needs the workers' status reports",
        ),
    ],
)
def test_run_refuses_alerts_it_could_not_know_complete(tmp_path, args, env, says):
    pages = tmp_path / "pages.jsonl"
    pages.write_text('{"id": "a", "text": "x"}\n')
    result = CliRunner().invoke(cli, ["run", "--feed", str(pages), *args], env=env)
    assert result.exit_code == 2 and says in result.output, result.output


def test_dedup_warns_of_articles_on_one_line_and_of_a_site_crowding_a_cluster(tmp_path):
    """Input that looks like trouble is named in dedup's summary with what to do: pages that hold
    a whole article on one line, and a cluster holding many pages of one site."""
    story = " ".join(
        f"The council met on day {n} and said the plan for the bridge would go ahead." for n in range(15)
    )
    lines = [{"id": f"v{n}", "source": "a.example", "text": f"{story} Update {n}."} for n in range(7)]
    lines += [
        {"id": "other", "source": "b.example", "text": "A short note of its own, with a few words in it."}
    ]
    pages = tmp_path / "pages.jsonl"
    pages.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    result = CliRunner().invoke(cli, ["dedup", str(pages), "-o", str(tmp_path / "out.jsonl")])
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.output.splitlines() if line.startswith("warning: ")]
    assert len(warnings) == 2
    assert warnings[0].startswith("warning: 7 pages (88%) hold a whole article on one line")
    assert "1 clusters hold more than 5 pages of one site (the largest 7 of a.example)" in warnings[1]
    quiet = tmp_path / "quiet.jsonl"
    quiet.write_bytes(orjson.dumps(lines[-1]) + b"\n")
    assert (
        "warning"
        not in CliRunner().invoke(cli, ["dedup", str(quiet), "-o", str(tmp_path / "q.jsonl")]).output
    )
