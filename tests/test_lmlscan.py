"""The scanner (``lmlscan``) reads what the lxml reader reads, or leaves the document to it;
results spliced into a scanned document's bytes equal those the tree would get.

Seeded; ``JUFO_FUZZ=N`` runs N mutated documents (default 300)."""

import os
import random

import pytest

from conftest import SAMPLES, running, snapshot, waiting
from jufo.io import lml
from jufo.io import lmlscan
from jufo.io.errors import InputError
from test_lml import DOCUMENTS, INFO_LAYOUTS, _document

CASES = int(os.environ.get("JUFO_FUZZ", "300"))
PAIRS = [("jufo_starttime", "01/10/12-12:00:00"), ("jufo_reason", 'a<b & "c" > d\n\te\r f é ∞')]


def _read(raw: bytes, scanned: bool):
    """``(objects, unknown info ids)`` as plain values, or the error message."""
    try:
        doc = lml.parse(raw) if scanned else lml._parse_tree(raw, "input")
    except InputError as err:
        return str(err)
    return [(o.id, o.type, o.name, o.index, list(o.data.items())) for o in doc.objects], doc.unknown_info_ids


def _documents() -> dict[str, bytes]:
    docs = {path.name: path.read_bytes() for path in sorted(SAMPLES.rglob("*.xml"))}
    for document in DOCUMENTS:
        for layout in INFO_LAYOUTS:
            for default_namespace in (False, True):
                docs[f"{document}/{layout}/{default_namespace}"] = _document(layout, default_namespace, document)
    docs["snapshot"] = snapshot({"a": waiting(2, 10), "r": running(1, 50)})
    docs["no namespace"] = snapshot({"a": waiting(2, 10)}, namespace=None)
    return docs


DOCS = _documents()


@pytest.mark.parametrize("name", sorted(DOCS))
def test_the_scanner_reads_what_lxml_reads(name):
    assert _read(DOCS[name], True) == _read(DOCS[name], False)


def _fields(found: lmlscan.Scan) -> tuple:
    return found.objects, [(i.oid, i.start, i.end, i.count, i.ends, i.first_result, i.plain, i.values)
                           for i in found.infos]


def _both(raw: bytes) -> tuple[lmlscan.Scan | None, lmlscan.Scan | None]:
    """What the regular expressions and expat's walk read, where the document is well-formed."""
    root = lmlscan._check(raw)
    if root is None:
        return None, None
    return lmlscan._layout(raw, root), lmlscan._walk(raw)


@pytest.mark.parametrize("name", sorted(DOCS))
def test_the_layout_reader_agrees_with_the_walk(name):
    """Where a document is in LLview's exact layout, the regular expressions find the same
    objects, data and byte positions as expat's walk over every element."""
    layout, walk = _both(DOCS[name])
    if layout is None:
        pytest.skip("not in LLview's exact layout")
    assert walk is not None and _fields(layout) == _fields(walk)


def test_the_layout_reader_reads_llviews_files_and_jufos_own():
    assert all(_both(DOCS[name])[0] is not None for name in ("jobs_LML.xml", "nodes_LML.xml", "snapshot",
                                                              "utf-8/llview/False", "utf-8/compact/False"))


def _results(raw: bytes) -> dict[str, list[tuple[str, str]]]:
    doc = lml._parse_tree(raw, "input")
    return {o.id: list(PAIRS) for o in doc.objects if o.type == "job"}


@pytest.mark.parametrize("name", sorted(DOCS))
def test_results_spliced_into_the_bytes_equal_the_trees(name):
    """Where lxml writes the untouched document as it was (every shipped sample, LLview's
    layouts), the bytes with the results spliced in equal the tree's; predicting that output
    again (its results replaced) too."""
    raw = DOCS[name]
    if lml.serialize(lml._parse_tree(raw, "input")) != raw:
        pytest.skip("lxml rewrites this document (a DOCTYPE, another encoding, a comment's mark)")
    for _ in range(2):
        results = _results(raw)
        fast, slow = lml.parse(raw), lml._parse_tree(raw, "input")
        lml.add_results(fast, results)
        lml.add_results(slow, results)
        out = lml.serialize(fast)
        assert out == lml.serialize(slow)
        raw = out  # once more, on the output


def test_a_plain_document_is_scanned_and_written_without_a_tree():
    """The layout LLview and ``swf2lml`` write takes the fast way all through: no tree is
    built, results (and an earlier run's results) are edits of the bytes."""
    raw = snapshot({"a": waiting(2, 10), "b": waiting(1, 10)})
    doc = lml.parse(raw)
    lml.add_results(doc, {"a": list(PAIRS), "b": [("jufo_reason", "x")]})
    again = lml.parse(lml.serialize(doc))
    assert doc._tree is None and doc.edits
    lml.add_results(again, {"a": [("jufo_endtime", "y")]})
    assert again._tree is None and len(again.edits) == 2  # a's results replaced, b's removed
    out = lml.serialize(again)
    assert b"jufo_reason" not in out and out.count(b"jufo_") == 1


@pytest.mark.parametrize("raw, why", [
    (b'<?xml version="1.0" encoding="ISO-8859-1"?><lgui/>', "another encoding"),
    (b'<!DOCTYPE lgui><lgui/>', "a DOCTYPE"),
    (b'<lgui><objects><object id="a" type="job"/><object id="a" type="job"/></objects></lgui>', "an id twice"),
    (b'<lgui><objects><object type="job"/></objects></lgui>', "no id"),
    (b'<other/>', "not LML"),
    (b'<lgui xmlns="urn:x"/>', "another namespace"),
    (b'<lgui>' + b'<a>' * 300 + b'</a>' * 300 + b'</lgui>', "deeper than libxml2 reads"),
    (b'<lgui><a></lgui>', "not well-formed"),
    ("\ufeff<lgui/>".encode("utf-16"), "UTF-16"),
])
def test_the_scanner_leaves_to_lxml_what_it_does_not_handle(raw, why):
    assert lmlscan.scan(raw) is None, why


def test_a_document_deeper_than_libxml2_reads_is_still_refused():
    raw = snapshot({"a": waiting(2, 10)}).replace(b"</objects>", b"<x>" * 300 + b"</x>" * 300 + b"</objects>")
    with pytest.raises(InputError, match="not well-formed"):
        lml.parse(raw)


def test_a_scanned_document_builds_its_tree_when_asked_with_the_results_in_it():
    """Whoever asks a scanned document for its tree after results went into the bytes (a
    merge, a check) gets them in the tree, and writing gives the same bytes."""
    raw = snapshot({"a": waiting(2, 10)})
    doc = lml.parse(raw)
    lml.add_results(doc, {"a": list(PAIRS)})
    spliced = lml.serialize(doc)
    assert doc.infos["a"] and doc._tree is not None and doc.edits is None  # the tree, with the results pending
    assert [pairs for _, pairs, _, _ in doc.pending] == [PAIRS]
    assert lml.serialize(doc) == spliced


_PALETTE = [b"<", b">", b"/", b'"', b"'", b"&", b"&amp;", b"&#10;", b"&#0;", b"=", b"!", b"-", b"?", b"[", b"]",
            b" ", b"\n", b"\r", b"\t", b":", b"x", b"data", b"info", b"jufo_", b"\xc3", b"\xc3\xa9", b"\x00",
            b"<!-- c -->", b"<![CDATA[x]]>", b"<?pi x?>", b"<data key='k' value='v'/>", b'xmlns:p="urn:p"',
            b"<p:data key=\"k\" value=\"v\"/>", b"</info>", b"<info oid=\"a\">", b"\xef\xbb\xbf", b'xmlns:q=""',
            b'xmlns=""', b"]]>", b"&#xFFFE;", b"&#1;", b"&#x10FFFF;", b"\xc2\xb7", b"\xe2\x80\xa8", b"\xef\xbf\xbe",
            b'version="1.1"', b"1.1", b"\xed\xa0\x80", b"<data key=\"jufo_x\" value=\"1\"/>"]


def _mutate(raw: bytes, rng: random.Random) -> bytes:
    if rng.random() < 0.15:  # a data element with text that looks like a tag's end
        at = rng.choice([i for i in range(len(raw)) if raw.startswith(b'"/>', i)] or [0])
        raw = raw[:at] + raw[at:].replace(b'"/>', rng.choice([b'">/></data>', b'"> /> </data>']), 1)
        if rng.random() < 0.5:
            return raw
    for _ in range(rng.randint(1, 3)):
        at = rng.randrange(len(raw) + 1)
        cut = rng.choice([0, 0, 1, rng.randint(1, 40)])
        raw = raw[:at] + (rng.choice(_PALETTE) if rng.random() < 0.8 else b"") + raw[at + cut:]
    return raw


@pytest.mark.parametrize("case", range(CASES))
def test_mutated_documents_read_alike(case):
    """Bytes inserted, cut and replaced where they matter to XML: the scanner reads the same
    objects as lxml, or leaves the document to lxml (the same message, then). Where it splices,
    the output reads back to the same data as the tree's output."""
    rng = random.Random(case)
    base = rng.choice([DOCS["snapshot"], DOCS["no namespace"], DOCS["utf-8/llview/False"],
                       DOCS["utf-8/indented/False"]])
    raw = _mutate(base, rng)
    assert _read(raw, True) == _read(raw, False)
    layout, walk = _both(raw)
    if layout is not None:
        assert walk is not None and _fields(layout) == _fields(walk)
    if isinstance(_read(raw, False), str):
        return
    results = {o.id: list(PAIRS) for o in lml._parse_tree(raw, "input").objects}
    fast, slow = lml.parse(raw), lml._parse_tree(raw, "input")
    lml.add_results(fast, results)
    lml.add_results(slow, results)
    assert _read(lml.serialize(fast), False) == _read(lml.serialize(slow), False)


def test_files_to_merge_and_to_validate_are_parsed_once(tmp_path, monkeypatch):
    """Merging and the schema check work on trees: their files are parsed by lxml at once,
    not scanned first and parsed again; a single file to predict is scanned only."""
    calls = []
    real = lmlscan.scan
    monkeypatch.setattr(lmlscan, "scan", lambda raw: calls.append(1) or real(raw))
    jobs = SAMPLES / "llview2" / "jobs_LML.xml"
    nodes = SAMPLES / "llview2" / "nodes_LML.xml"
    merged = lml.read_all([str(jobs), str(nodes)])
    assert calls == [] and merged._tree is not None
    assert lml.read_all([str(jobs)], scan=False)._tree is not None and calls == []
    single = lml.read_all([str(jobs)])
    assert calls == [1] and single._tree is None


def test_a_value_holding_a_tag_end_keeps_the_results_after_its_tag():
    """``/>`` and ``>`` may stand in a value (lxml writes ``&gt;``; the scanned document keeps
    the input's bytes): the results still go after the whole tag, and read back alike."""
    raw = _document("llview", False, "utf-8").replace(b'value="1"', b'value="0/>"').replace(b'value="2"',
                                                                                           b'value="1/>"')
    doc = lml.parse(raw)
    lml.add_results(doc, {"a": list(PAIRS)})
    assert doc.edits is not None
    out = lml.serialize(doc)
    assert b'<data key="y" value="1/>"/>\n<data key="jufo_starttime"' in out
    slow = lml._parse_tree(raw, "input")
    lml.add_results(slow, {"a": list(PAIRS)})
    assert _read(out, False) == _read(lml.serialize(slow), False)


def test_references_are_read_in_llviews_layout():
    """Ids, keys and values with references (``&amp;``, ``&#10;``, a result key spelt
    ``&#106;ufo_``) are read by the layout reader as by expat and lxml; the result so spelt is
    replaced when results are added again."""
    raw = snapshot({"a&b": waiting(2, 10, name="x < y &\nz", note="\"q'")}).replace(b"z\"", b"z &#x41;\"")
    raw = raw.replace(b'<data key="owner"', b'<data key="&#106;ufo_starttime" value="old"/>\n<data key="owner"')
    raw = raw.replace(b'key="note"', b'key="n&amp;te"')
    layout, walk = _both(raw)
    assert layout is not None and _fields(layout) == _fields(walk)
    assert _read(raw, True) == _read(raw, False)
    job = next(i for i in layout.infos if i.oid == "a&b")
    assert job.values["name"] == "x < y &\nz A" and job.values["n&te"] == "\"q'" and not job.plain
    raw = raw.replace(b'<data key="&#106;ufo_starttime" value="old"/>\n', b"")
    raw = raw.replace(b"</info>", b'<data key="&#106;ufo_starttime" value="old"/>\n</info>')
    fast, slow = lml.parse(raw), lml._parse_tree(raw, "input")
    results = {"a&b": list(PAIRS)}
    lml.add_results(fast, results)
    lml.add_results(slow, results)
    assert fast.edits is not None and b"old" not in lml.serialize(fast)
    assert _read(lml.serialize(fast), False) == _read(lml.serialize(slow), False)  # (lxml writes &#x41; as A)


def test_an_id_with_a_reference_is_decoded_where_its_data_hold_none():
    """The layout reader decodes an info's oid on its own account: the data after it may hold
    no reference at all."""
    raw = snapshot({"a&b": waiting(2, 10)})
    info = raw[raw.index(b'<info oid="a&amp;b"'):]
    assert b"&" not in info[info.index(b">"):]  # only the object and the info's start tag hold one
    layout, walk = _both(raw)
    assert layout is not None and _fields(layout) == _fields(walk)
    assert "a&b" in {info.oid for info in layout.infos} and ("a&b", "job", "a&b") in layout.objects


def test_expat_reads_only_what_lies_around_the_content_the_expressions_matched(monkeypatch):
    """In LLview's layout expat reads the prolog, the root's tags and what follows, not the
    megabytes between: the expressions vouch for those."""
    raw = snapshot({f"j{i}": waiting(2, 10) for i in range(200)})
    read: list[int] = []
    check = lmlscan._check
    monkeypatch.setattr(lmlscan, "_check", lambda text: read.append(len(text)) or check(text))
    found = lmlscan.scan(raw)
    assert found is not None and found.inner[0] > 0 and len(read) == 1 and read[0] < 300 < len(raw) / 100


@pytest.mark.parametrize("inside, why", [
    ("&#0;", "a reference to NUL"), ("&#xD800;", "a surrogate"), ("&#x110000;", "past Unicode"),
    ("\x01", "a control character"), ("\x1f", "a control character"), ("&foo;", "an undeclared entity"),
    ("a & b", "a bare ampersand"), ("&#x41", "a reference without its semicolon"),
])
def test_what_xml_forbids_inside_a_value_is_refused_as_lxml_refuses_it(inside, why):
    raw = snapshot({"a": waiting(2, 10)}).replace(b'value="2"', f'value="{inside}"'.encode(), 1)
    assert inside.encode() in raw
    message = _read(raw, False)
    assert isinstance(message, str) and _read(raw, True) == message, why


@pytest.mark.parametrize("before, after, why", [
    (b"<!-- a -- b -->", b"", "a comment with a double hyphen in the prolog"),
    (b"", b"<x/>", "a second root"),
    (b"", b"text", "text after the root"),
    (b"<!DOCTYPE lgui>", b"", "a DOCTYPE"),
    (b"<?pi ?><!-- c -->\n", b"\n<!-- end -->\n", "comments and a PI around the root (well-formed)"),
])
def test_the_prolog_and_what_follows_the_root_are_read_as_lxml_reads_them(before, after, why):
    raw = snapshot({"a": waiting(2, 10)})
    head = raw.index(b"?>") + 2
    raw = raw[:head] + before + raw[head:].rstrip() + after
    assert _read(raw, True) == _read(raw, False), why


def test_a_long_prolog_that_fails_costs_linear_time():
    """The prolog's guess never backtracks: 100,000 blanks or comments before a DOCTYPE are
    given up on at once (a first version took exponential time on 24 blanks and tabs)."""
    import time

    for prolog in (b" " * 100_000 + b"\t" * 100_000, b"<!-- c -->" * 100_000):
        began = time.perf_counter()
        assert lmlscan._PROLOG.match(prolog + b"<!DOCTYPE lgui><lgui/>") is None
        assert time.perf_counter() - began < 1.0
