"""Every command's --json output follows schemas/jufo-json.schema.json (one versioned schema).

The checker below knows the part of JSON Schema the file uses (type, const, pattern,
required, properties, items, oneOf, local $ref), so no dependency is needed for it.
"""

from __future__ import annotations

import json
import random
import re

import pytest
from click.testing import CliRunner

from conftest import ROOT, SAMPLES
from jufo.cli import JSON_SCHEMA, main

SCHEMA = json.loads((ROOT / "schemas" / "jufo-json.schema.json").read_text())
TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}


def problems(value, schema: dict, path: str = "$") -> list[str]:
    """Where ``value`` breaks ``schema``: an empty list when it conforms."""
    if "$ref" in schema:
        name = schema["$ref"].removeprefix("#/$defs/")
        return problems(value, SCHEMA["$defs"][name], path)
    out: list[str] = []
    if "type" in schema:
        kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_is(value, kind) for kind in kinds):
            return [f"{path}: {value!r} is not {kinds}"]
    if "const" in schema and value != schema["const"]:
        out.append(f"{path}: {value!r} is not {schema['const']!r}")
    if "pattern" in schema and isinstance(value, str) and not re.search(schema["pattern"], value):
        out.append(f"{path}: {value!r} does not match {schema['pattern']}")
    if isinstance(value, dict):
        out += [f"{path}: {key} is missing" for key in schema.get("required", ()) if key not in value]
        for key, sub in schema.get("properties", {}).items():
            if key in value:
                out += problems(value[key], sub, f"{path}.{key}")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            out += problems(item, schema["items"], f"{path}[{i}]")
    if "oneOf" in schema:
        matching = [s for s in schema["oneOf"] if not problems(value, s, path)]
        if len(matching) != 1:
            out.append(f"{path}: matches {len(matching)} of oneOf, not exactly one")
    return out


def _is(value, kind: str) -> bool:
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, TYPES[kind])


def conforms(text: str, command: str) -> dict:
    data = json.loads(text)
    assert data["schema"] == JSON_SCHEMA and data["command"] == command
    found = problems(data, SCHEMA)
    assert not found, found[:5]
    return data


def cli(*args: str):
    return CliRunner().invoke(main, list(args))


def test_the_checker_catches_breaks():
    good = {"schema": JSON_SCHEMA, "command": "validate", "input": ["a"], "valid": True, "objects": 1, "jobs": 0,
            "problems": [], "warnings": []}
    assert problems(good, SCHEMA) == []
    assert problems({**good, "valid": "yes"}, SCHEMA)
    assert problems({k: v for k, v in good.items() if k != "jobs"}, SCHEMA)
    assert problems({**good, "schema": "jufo.v0"}, SCHEMA)


@pytest.fixture(scope="module")
def predicted(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("json")
    files = [str(p) for p in sorted((SAMPLES / "llview2").glob("*.xml"))]
    out = tmp / "p.xml"
    result = cli("predict", *files, "-o", str(out), "--json")
    assert result.exit_code == 0, result.stderr
    return tmp, out, result.stdout


def test_predict(predicted):
    tmp, out, text = predicted
    data = conforms(text, "predict")
    assert data["summary"] == {"jobs": 7, "running": 2, "waiting": 5, "predicted": 4, "cannot_start": 1,
                               "latest_start": "2025-06-03T11:00:00"}
    jobs = {j["job"]: j for j in data["jobs"]}
    assert jobs["1100"]["array_starts"] == "2-3=2025-06-03T11:00:00;4-5=2025-06-03T18:00:00"
    assert jobs["1400"]["reason"].startswith("Held")
    again = cli("predict", *[str(p) for p in sorted((SAMPLES / "llview2").glob("*.xml"))], "-o",
                str(tmp / "q.xml"), "--json-out", str(tmp / "p.json"))
    assert again.exit_code == 0 and again.stdout == ""
    assert (tmp / "p.json").read_text() == text  # the same JSON, to a file
    refused = cli("predict", str(SAMPLES / "thesis-table-3.1.xml"), "--json")
    assert refused.exit_code == 2 and "--json" in refused.stderr


def test_show_validate_evaluate(predicted):
    tmp, out, _ = predicted
    conforms(cli("show", str(out), "--json").stdout, "show")
    data = conforms(cli("validate", str(SAMPLES / "thesis-table-3.1.xml"), "--json").stdout, "validate")
    assert data["valid"] is True
    bad = tmp / "bad.xml"
    bad.write_bytes((SAMPLES / "thesis-table-3.1.xml").read_bytes().replace(b'"system_time"', b'"sys_time"'))
    result = cli("validate", str(bad), "--json")
    assert result.exit_code == 2 and conforms(result.stdout, "validate")["valid"] is False
    actual = tmp / "later.xml"  # a later snapshot: the predicted jobs running since their predicted start
    actual.write_bytes(started_as_predicted(out.read_bytes()))
    conforms(cli("evaluate", str(out), "--actual", str(actual), "--json").stdout, "evaluate")
    conforms(cli("evaluate", str(out), "--actual", str(actual), "--json", "--per-job").stdout, "evaluate")


def started_as_predicted(raw: bytes) -> bytes:
    """A predicted file as a later live snapshot would show it: every job with a predicted
    start running since then."""
    from lxml import etree

    root = etree.fromstring(raw)
    for info in root.iter("{*}info"):
        data = {d.get("key"): d for d in info.iter("{*}data")}
        if "jufo_starttime" in data and "state" in data:
            data["state"].set("value", "Running")
            extra = etree.SubElement(info, data["state"].tag)
            extra.set("key", "dispatchdate")
            extra.set("value", data["jufo_starttime"].get("value"))
    return etree.tostring(root)


def small_trace(path, jobs: int = 60) -> None:
    rng = random.Random(5)
    lines = ["; MaxProcs: 16"]
    submit = 0
    for n in range(1, jobs + 1):
        submit += rng.randint(600, 7200)
        wait, run = rng.randint(0, 20000), rng.randint(60, 20000)
        lines.append(f"{n} {submit} {wait} {run} {rng.randint(1, 8)} -1 -1 {rng.randint(1, 8)} {run * 2} -1 1 "
                     f"{rng.randint(1, 4)} 1 -1 1 -1 -1 -1")
    path.write_text("\n".join(lines) + "\n")


def test_replay_backtest_history(tmp_path):
    trace = tmp_path / "t.swf"
    small_trace(trace)
    conforms(cli("replay", str(trace), "--json", "-q").stdout, "replay")
    result = cli("backtest", str(trace), "--every", "43200", "--json")
    assert result.exit_code == 0, result.stderr
    conforms(result.stdout, "backtest")
    history = tmp_path / "h.db"
    assert cli("history", "import", str(trace), "--history", str(history)).exit_code == 0
    conforms(cli("history", "show", "--history", str(history), "--json").stdout, "history show")


def test_history_show_json_dates_are_iso_and_backtest_says_how_it_sampled(tmp_path):
    """Issue 35, item 6: history show's as_of was epoch seconds; every JSON date is ISO 8601."""
    trace = tmp_path / "t.swf"
    trace.write_text("; MaxProcs: 4\n; UnixStartTime: 820454400\n"
                     "1 0 60 100 1 -1 -1 1 200 -1 1 1 1 -1 1 -1 -1 -1\n"
                     "2 30 200 100 4 -1 -1 4 200 -1 1 2 1 -1 1 -1 -1 -1\n")
    db = tmp_path / "h.db"
    assert cli("history", "import", str(trace), "--history", str(db)).exit_code == 0
    shown = conforms(cli("history", "show", "--history", str(db), "--json").stdout, "history show")
    assert shown["as_of"] == "1996-01-01T00:05:30"
    assert set(shown["range_coverage_so_far"]) == {"all", "by_horizon", "by_user_queue"}
    done = cli("backtest", str(trace), "--at-submit", "--json")
    assert done.exit_code == 0, done.output
    assert conforms(done.stdout, "backtest")["at_submit"] is True
