"""Sharding: the partition (shard.py) and `run --shard I/N` end to end, merged back with `merge`."""

from __future__ import annotations

import json
import random
import shlex
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from agent_eval_action.cli import main
from agent_eval_action.compare.model import Change, Diff
from agent_eval_action.pipeline.shard import parse_shard, partition
from agent_eval_action.pipeline.suite import load_suite
from agent_eval_action.results import Results

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
AGENT = shlex.join([sys.executable, str(EXAMPLES / "agent" / "support_agent.py")])


def keys(n: int, sets: int = 3) -> list[tuple[str, str]]:
    return [(f"set{i % sets}", f"case_{i:03d}") for i in range(n)]


def loads(split, durations) -> list[float]:
    return [sum(durations[c] for c in split.cases(i)) for i in range(1, split.count + 1)]


# --- the partition ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"), [("1/1", (1, 1)), ("3/4", (3, 4)), ("12/12", (12, 12))]
)
def test_parse_shard(text, expected):
    assert parse_shard(text) == expected


@pytest.mark.parametrize(
    "text", ["0/4", "5/4", "a/b", "1/0", "0/0", "1/", "/4", "-1/4", "1/4/2", ""]
)
def test_parse_shard_rejects(text):
    with pytest.raises(ValueError, match=r"^--shard: "):
        parse_shard(text)


@pytest.mark.parametrize("count", [1, 2, 3, 7, 50, 60])
@pytest.mark.parametrize("with_durations", [False, True])
def test_every_case_is_in_exactly_one_shard(count, with_durations):
    cases = keys(50)
    durations = {c: random.Random(i).uniform(0.1, 9) for i, c in enumerate(cases)}
    split = partition(cases, count, durations if with_durations else None)
    assert split.by_durations == with_durations
    parts = [split.cases(i) for i in range(1, count + 1)]
    assert sorted(c for part in parts for c in part) == sorted(cases)
    assert sum(len(part) for part in parts) == len(cases)  # disjoint
    assert set(split.assignment.values()) <= set(range(1, count + 1))


@pytest.mark.parametrize("n", [0, 1, 5, 6, 7, 31, 100])
@pytest.mark.parametrize("count", [1, 2, 3, 4, 9])
def test_hash_split_is_balanced_within_one_case(n, count):
    sizes = [len(partition(keys(n), count).cases(i)) for i in range(1, count + 1)]
    assert max(sizes) - min(sizes) <= 1


def test_the_split_does_not_depend_on_the_order_cases_are_listed_in():
    cases = keys(40)
    shuffled = random.Random(3).sample(cases, len(cases))
    durations = {c: float(i % 7) for i, c in enumerate(cases)}  # many ties
    for given in (None, durations):
        first, again = partition(cases, 4, given), partition(shuffled, 4, given)
        assert first.assignment == again.assignment  # the same mapping
        assert first == partition(cases, 4, given)  # and deterministic, hash included


def test_hash_split_deals_by_sha256_of_the_case_key():
    # sha256 of "s/d" < "s/a" < "s/c" < "s/b" (0333.. 51b3.. 5d83.. c823..), dealt 1, 2, 1, 2.
    split = partition([("s", "a"), ("s", "b"), ("s", "c"), ("s", "d")], 2)
    assert split.assignment == {("s", "a"): 2, ("s", "b"): 2, ("s", "c"): 1, ("s", "d"): 1}


def test_lpt_balances_by_duration_not_by_count():
    durations = {("s", "big"): 10.0, **{("s", f"small{i}"): 1.0 for i in range(10)}}
    split = partition(list(durations), 2, durations)
    assert split.by_durations
    assert split.cases(1) == [("s", "big")] or split.cases(2) == [("s", "big")]
    assert sorted(loads(split, durations)) == [10.0, 10.0]


def test_lpt_greedy_assignment():
    durations = {("s", n): d for n, d in zip("abcdef", [7, 5, 4, 3, 3, 2], strict=True)}
    split = partition(list(durations), 2, durations)
    assert loads(split, durations) == [12.0, 12.0]  # 7+3+2 | 5+4+3


@pytest.mark.parametrize("seed", range(20))
def test_lpt_loads_differ_by_at_most_the_longest_case(seed):
    rng = random.Random(seed)
    cases = keys(rng.randrange(1, 80))
    durations = {c: rng.expovariate(1.0) for c in cases}
    count = rng.randrange(1, 9)
    shard_loads = loads(partition(cases, count, durations), durations)
    assert max(shard_loads) - min(shard_loads) <= max(durations.values()) + 1e-9


def test_cases_the_baseline_lacks_get_the_mean_duration():
    cases = keys(4)
    known = {cases[0]: 9.0, cases[1]: 1.0}  # cases[2], cases[3] count as 5.0 each
    split = partition(cases, 2, known)
    assert split.by_durations
    assert sorted(loads(split, {**known, cases[2]: 5.0, cases[3]: 5.0})) == [10.0, 10.0]


@pytest.mark.parametrize(
    "durations", [None, {}, {("elsewhere", "x"): 3.0}, {c: 0.0 for c in keys(10)}]
)
def test_without_usable_durations_the_split_is_by_hash(durations):
    split = partition(keys(10), 3, durations)
    assert not split.by_durations
    assert split == partition(keys(10), 3)


def test_partition_hash_changes_with_the_suite_the_count_and_the_durations():
    cases = keys(12)
    durations = {c: 1.0 + i for i, c in enumerate(cases)}
    base = partition(cases, 3).partition_hash
    # Pinned: shards computed on different machines (or Python hash seeds) must agree.
    assert base == "f87dd5bb8af9a71a9577d1812ab0da7e873f42c16dbfffd3829af55c70b967dc"
    assert partition(cases[:-1], 3).partition_hash != base
    assert partition(cases, 4).partition_hash != base
    timed = partition(cases, 3, durations)
    assert timed.partition_hash != base
    slower = partition(cases, 3, {c: 2 * d for c, d in durations.items()})
    assert slower.assignment == timed.assignment  # same assignment, other durations
    assert slower.partition_hash != timed.partition_hash


def test_partition_hash_is_stable_across_processes():
    expected = partition(keys(9), 2).partition_hash
    code = (
        "from agent_eval_action.pipeline.shard import partition;"
        "print(partition([(f'set{i % 3}', f'case_{i:03d}') for i in range(9)], 2).partition_hash)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": "123", "PATH": ""},
    )
    assert done.stdout.strip() == expected


def test_duplicate_cases_are_refused():
    with pytest.raises(ValueError):
        partition([("s", "a"), ("s", "a")], 2)


# --- run --shard, end to end ----------------------------------------------------------


def run(out: Path, *flags: str) -> int:
    argv = ["run", str(EXAMPLES / "evals"), "--command", AGENT, "--concurrency", "2"]
    return main([*argv, "--out", str(out), *flags])


def read(path: Path) -> Results:
    return Results.from_json(path.read_text())


def verdicts(results: Results) -> list[tuple]:
    return [
        (
            c.eval_set_id,
            c.eval_id,
            c.status,
            {name: (m.score, m.status, m.runs) for name, m in c.metrics.items()},
        )
        for c in results.cases
    ]


@pytest.fixture(scope="module")
def suite_runs(tmp_path_factory):
    """The example suite unsharded, as 3 shards by hash, and as 3 shards by the first's durations."""
    tmp = tmp_path_factory.mktemp("shards")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("GITHUB_SHA", "0123abc")
        env.setenv("GITHUB_REPOSITORY", "octo/agent")
        codes = {"full": run(tmp / "full.json")}
        for i in (1, 2, 3):
            codes[f"hash{i}"] = run(tmp / f"hash{i}.json", "--shard", f"{i}/3")
            codes[f"timed{i}"] = run(
                tmp / f"timed{i}.json", "--shard", f"{i}/3", "--baseline", str(tmp / "full.json")
            )
    return tmp, codes


def test_three_shards_merged_equal_the_unsharded_run(suite_runs, capsys):
    tmp, codes = suite_runs
    assert codes["full"] == 1  # gold_express_refund fails on purpose
    shards = [read(tmp / f"hash{i}.json") for i in (1, 2, 3)]
    assert [s.shard.index for s in shards] == [1, 2, 3]
    assert len({s.shard.partition_hash for s in shards}) == 1
    assert all(s.shard.count == 3 and s.shard.cases_total == 6 for s in shards)
    assert all(s.shard.baseline_sha is None for s in shards)
    assert [len(s.cases) for s in shards] == [2, 2, 2]
    assert all(len(s.eval_sets) == 2 for s in shards)  # every shard lists the whole suite's files
    merged_path = tmp / "merged.json"
    paths = [str(tmp / f"hash{i}.json") for i in (1, 2, 3)]
    assert main(["merge", *paths, "--out", str(merged_path)]) == 0
    full, merged = read(tmp / "full.json"), read(merged_path)
    assert verdicts(merged) == verdicts(full)
    assert merged.shard is None and not merged.partial
    assert main(["merge", *paths[:2], "--out", str(tmp / "two.json")]) == 3
    assert "shard 3/3 missing" in capsys.readouterr().err


def test_shards_with_a_baseline_split_by_its_durations_and_do_not_gate(suite_runs):
    tmp, codes = suite_runs
    # A shard holding the failing case still exits 0: the merge job compares and gates.
    assert [codes[f"timed{i}"] for i in (1, 2, 3)] == [0, 0, 0]
    shards = [read(tmp / f"timed{i}.json") for i in (1, 2, 3)]
    # the last shard's diff.json: its own cases against the baseline, the others' not
    # taken for removed ones; the family of its per-case evidence is the whole suite's
    diff = Diff.from_json((tmp / "diff.json").read_bytes())
    assert {(c.eval_set_id, c.eval_id) for c in diff.cases} == {c.key for c in shards[2].cases}
    assert all(c.change != Change.REMOVED for c in diff.cases)
    assert {s.shard.cases_compared for s in shards} == {6}
    assert {s.shard.baseline_sha for s in shards} == {"0123abc"}
    assert len({s.shard.partition_hash for s in shards}) == 1
    assert shards[0].shard.partition_hash != read(tmp / "hash1.json").shard.partition_hash
    merged = tmp / "timed.json"
    assert (
        main(["merge", *(str(tmp / f"timed{i}.json") for i in (1, 2, 3)), "--out", str(merged)])
        == 0
    )
    assert verdicts(read(merged)) == verdicts(read(tmp / "full.json"))
    base = str(tmp / "full.json")
    assert main(["compare", "--baseline", base, "--current", str(merged)]) == 0  # unchanged agent


def test_a_shard_without_cases_writes_empty_results_and_passes(tmp_path, capsys):
    code = run(tmp_path / "empty.json", "--shard", "7/7")
    assert code == 0
    assert "shard 7/7 has no cases (the suite has 6)" in capsys.readouterr().err
    data = json.loads((tmp_path / "empty.json").read_text())
    results = Results.from_json(json.dumps(data))
    assert results.cases == [] and not results.partial and len(results.eval_sets) == 2
    suite = load_suite([str(EXAMPLES / "evals")])
    cases = [(s.eval_set_id, c.eval_id) for s in suite.eval_sets for c in s.cases]
    assert msgspec.structs.asdict(results.shard) == {
        "index": 7,
        "count": 7,
        "partition_hash": partition(cases, 7).partition_hash,
        "cases_total": 6,
        "baseline_sha": None,
        "cases_compared": None,
    }


@pytest.mark.parametrize("value", ["0/4", "5/4", "a/b", "1/0"])
def test_bad_shard_values_exit_2_with_one_line(tmp_path, capsys, value):
    assert run(tmp_path / "r.json", "--shard", value) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --shard: ")
    assert not (tmp_path / "r.json").exists()
