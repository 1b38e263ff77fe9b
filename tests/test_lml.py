"""Reading and writing LML: namespaces, merging, fidelity, schema validity, hardening."""


import pytest
import xmlschema

from conftest import OFFICIAL_XSD, SAMPLES, predictions, snapshot, waiting

from jufo.io import lml
from jufo.io.errors import InputError

@pytest.fixture(scope="module")
def official():
    """The official LML schema from ../shared (skips where the checkout has no shared/ beside it)."""
    if not OFFICIAL_XSD.exists():
        pytest.skip(f"official LML schema not found at {OFFICIAL_XSD}")
    return xmlschema.XMLSchema(str(OFFICIAL_XSD))


@pytest.mark.parametrize("namespace", [lml.LML_NS, "http://www.llview.de", None])
def test_namespaces_accepted(jufo, namespace):
    raw = snapshot({"a": waiting(2, 10)}, namespace=namespace)
    run = jufo(raw)
    assert run.exit_code == 0, run.stderr
    assert run.start("a") == 0


def test_unknown_namespace_refused(jufo):
    raw = snapshot({"a": waiting(2, 10)}).replace(lml.LML_NS.encode(), b"urn:other")
    run = jufo(raw)
    assert run.exit_code == 2 and "namespace" in run.stderr and run.output == b""


def test_several_infos_merge_later_wins(jufo):
    raw = snapshot({"a": waiting(2, 10)}).replace(
        b"</information>",
        b'<info oid="a"><data key="wall" value="30"/></info>\n</information>')
    run = jufo(raw)
    end = predictions(run.output)["a"]["jufo_endtime"]
    assert end == "01/10/12-12:00:30"
    # results go to the object's last info
    assert run.output.index(b'key="wall" value="30"') < run.output.index(b"jufo_endtime")


def test_everything_else_kept(jufo):
    """Unknown object types, tables, comments, processing instructions, order and the prolog survive."""
    raw = snapshot({"a": waiting(2, 10)})
    raw = raw.replace(b'<?xml version="1.0" encoding="UTF-8"?>\n',
                      b"<?xml version='1.0' encoding='UTF-8'?>\n<!-- made by LML_da -->\n<?pi keep?>\n")
    raw = raw.replace(b"</objects>", b'<object id="pstat_x" type="pstat"/>\n</objects>')
    raw = raw.replace(b"</information>",
                      b'<info oid="pstat_x"><data key="t" value="1"/></info>\n</information>\n'
                      b'<!-- between -->\n<table id="t1" title="jobs" contenttype="jobs"><column id="1" name="x"/></table>')
    raw += b"<!-- after -->\n"
    run = jufo(raw)
    assert run.exit_code == 0, run.stderr
    out = run.output
    assert out.startswith(b"<?xml version='1.0' encoding='UTF-8'?>\n<!-- made by LML_da -->\n<?pi keep?>\n")
    assert out.endswith(b"</lml:lgui>\n<!-- after -->\n")
    assert b'<object id="pstat_x" type="pstat"/>' in out
    assert b'<!-- between -->\n<table id="t1" title="jobs" contenttype="jobs"><column id="1" name="x"/></table>' in out
    # removing the added data gives back the input
    stripped = b"\n".join(line for line in out.split(b"\n") if b'key="jufo_' not in line)
    assert stripped == raw


def test_output_is_byte_identical_and_idempotent(jufo):
    raw = (SAMPLES / "thesis-table-3.1.xml").read_bytes()
    first = jufo(raw).output
    assert jufo(raw).output == first
    assert jufo(first).output == first  # earlier jufo_* data is replaced, not repeated


def test_earlier_results_are_replaced_wherever_they_stand_in_an_info():
    """An info whose first key is a jufo_ key (written by another tool, or edited) loses it too."""
    raw = snapshot({"a": {"jufo_starttime": "old", **waiting(2, 10)}, "b": {**waiting(2, 10), "jufo_x": "old"}})
    doc = lml.parse(raw)
    lml.add_results(doc, {"a": [("jufo_starttime", "new")], "b": []})
    out = lml.serialize(doc)
    assert b'value="old"' not in out and out.count(b'key="jufo_starttime" value="new"') == 1
    assert [o.data.get("jufo_starttime") for o in doc.objects if o.id == "a"] == ["new"]


@pytest.mark.parametrize("sample", sorted(p.name for p in SAMPLES.glob("*.xml")))
def test_output_valid_against_official_schema(jufo, official, sample):
    raw = (SAMPLES / sample).read_bytes()
    if not official.is_valid(raw.decode()):
        pytest.skip(f"{sample} is not valid against the official schema itself")
    run = jufo(raw)
    assert run.exit_code == 0, run.stderr
    official.validate(run.output.decode())


def test_new_info_created_for_job_without_one(jufo, official):
    raw = snapshot({"a": waiting(2, 10)}).replace(b"</objects>", b'<object id="b" type="job"/>\n</objects>')
    run = jufo(raw)
    assert run.jobs["b"]["jufo_reason"].startswith("BadInput: state")
    official.validate(run.output.decode())


ENTITY_BOMB = b"""<?xml version="1.0"?>
<!DOCTYPE lgui [
 <!ENTITY a "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa">
 <!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">
 <!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">
]>
<lgui><objects><object id="x" type="job" name="&c;"/></objects></lgui>
"""

EXTERNAL_ENTITY = b"""<?xml version="1.0"?>
<!DOCTYPE lgui [ <!ENTITY x SYSTEM "file:///etc/hostname"> ]>
<lgui><objects><object id="s" type="system"/></objects>
<information><info oid="s"><data key="system_time" value="&x;"/></info></information></lgui>
"""


@pytest.mark.parametrize("raw", [ENTITY_BOMB, EXTERNAL_ENTITY], ids=["bomb", "external"])
def test_entities_refused(jufo, raw):
    run = jufo(raw)
    assert run.exit_code == 2
    assert run.output == b""
    assert "Traceback" not in run.stderr
    with pytest.raises(InputError):
        lml.parse(raw)


def test_input_never_modified(jufo, tmp_path):
    raw = (SAMPLES / "thesis-listing-7.2.xml").read_bytes()
    run = jufo(raw)
    assert run.exit_code == 0
    assert (tmp_path / "in.xml").read_bytes() == raw




def _append_one_by_one(info, pairs):
    """The straightforward writer ``add_results`` must equal: one element per pair after the
    info's last data, tagged like its first and indented like its last two."""
    from lxml import etree

    datas = list(info.iterchildren("{*}data"))
    if not datas:
        tag = lml._sibling_tag(info, "data")
        for key, value in pairs:
            info.append(etree.Element(tag, key=key, value=value))
        return
    last, tag = datas[-1], datas[0].tag
    between = datas[-2].tail if len(datas) > 1 else info.text
    end = last.tail
    for key, value in pairs:
        last.tail = between
        el = etree.Element(tag, key=key, value=value)
        last.addnext(el)
        el.tail = end
        last = el


INFO_LAYOUTS = {
    "llview": '<info oid="a" type="short">\n<data key="x" value="1"/>\n<data key="y" value="2"/>\n</info>',
    "indented": '<info oid="a">\n    <data key="x" value="1"/>\n    <data key="y" value="2"/>\n  </info>',
    "one data": '<info oid="a">\n  <data key="x" value="1"/>\n</info>',
    "compact": '<info oid="a"><data key="x" value="1"/><data key="y" value="2"/></info>',
    "empty": '<info oid="a"/>',
    "only a comment": '<info oid="a">\n<!-- c -->\n</info>',
    "comment after": '<info oid="a">\n<data key="x" value="1"/>\n<!-- c -->\n</info>',
    "comment before": '<info oid="a"><!-- c --><data key="x" value="1"/> <data key="y" value="2"/>\n</info>',
    "comment between": '<info oid="a"><data key="x" value="1"/><!-- c --><data key="y" value="2"/></info>',
    "prefixed": '<info oid="a">\n<lml:data key="x" value="1"/>\n<lml:data key="y" value="2"/>\n</info>',
    "odd tails": '<info oid="a">&#13;\n<data key="x" value="1"/>a &amp; b &lt;&#13;\n<data key="y" value="2"/>\n</info>',
    "own namespace": '<info oid="a">\n<data xmlns="urn:x" key="x" value="1"/>\n<data xmlns="urn:x" key="y" value="2"/>\n</info>',
    "other child last": '<info oid="a"><data key="x" value="1"/>\n<note/>\n</info>',
    "text in data": '<info oid="a">\n<data key="w" value="0">/></data>\n<data key="x" value="1">/></data>\n</info>',
    "text in the last": '<info oid="a">\n<data key="w" value="0"/>\n<data key="x" value="1">/></data>\n</info>',
    "text in the only one": '<info oid="a">\n<data key="x" value="1">/></data>\n</info>',
    "text in the one before": '<info oid="a">\n<data key="w" value="0">/></data>\n<data key="x" value="1"/>\n</info>',
}


DOCUMENTS = {  # how the file around the infos may make splicing the text in impossible
    "utf-8": ("UTF-8", ""),
    "latin-1": ("ISO-8859-1", ""),  # not spliced: written by libxml2, '∞' as a reference
    "doctype": ("UTF-8", "<!DOCTYPE lgui>\n"),
    "holds the mark": ("UTF-8", "<!-- \ue0000\ue001 \ue000 -->\n"),  # not spliced: the mark is not unique
}


def _document(layout: str, default_namespace: bool, document: str) -> bytes:
    encoding, prolog = DOCUMENTS[document]
    root = ('<lgui xmlns="http://eclipse.org/ptp/lml" xmlns:lml="http://eclipse.org/ptp/lml">' if default_namespace
            else '<lml:lgui xmlns:lml="http://eclipse.org/ptp/lml">')
    return (f'<?xml version="1.0" encoding="{encoding}"?>\n{prolog}{root}\n<objects>\n<object id="a" name="a" type="job"/>\n'
            f'<object id="b" name="b" type="job"/>\n</objects>\n<information>\n{INFO_LAYOUTS[layout]}\n'
            f'<info oid="b">\n<data key="z" value="3"/>\n</info>\n</information>\n'
            f'{"</lgui>" if default_namespace else "</lml:lgui>"}\n').encode(encoding)


@pytest.mark.parametrize("document", sorted(DOCUMENTS))
@pytest.mark.parametrize("layout", sorted(INFO_LAYOUTS))
@pytest.mark.parametrize("default_namespace", [False, True])
def test_results_are_written_as_one_element_per_pair_would_write_them(layout, default_namespace, document):
    """``add_results`` splices the new data's text into the bytes, or builds the elements from
    one parsed text; whatever the info's layout, the document around it and whatever
    characters the values hold, the bytes equal those of the one-by-one writer."""
    raw = _document(layout, default_namespace, document)
    pairs = {"a": [("jufo_starttime", "12:00"), ("jufo_reason", 'a<b & "c" > d\n\te\r f é ∞'), ("jufo_x", "")],
             "b": [("jufo_y", "&amp;")]}
    fast = lml.parse(raw)
    lml.add_results(fast, pairs)
    slow = lml.parse(raw)
    for oid, new in pairs.items():
        _append_one_by_one(slow.infos[oid][-1], new)
    out = lml.serialize(fast)
    assert out == lml.serialize(slow)
    assert lml.serialize(fast) == out  # serializing leaves the document as it was
    again = lml.parse(out)
    assert {o.id: {k: v for k, v in o.data.items() if k.startswith("jufo_")} for o in again.objects} == {
        oid: dict(new) for oid, new in pairs.items()}


def test_results_added_again_replace_those_not_yet_written():
    doc = lml.parse(_document("llview", False, "utf-8"))
    lml.add_results(doc, {"a": [("jufo_starttime", "old")], "b": [("jufo_y", "old")]})
    lml.add_results(doc, {"a": [("jufo_starttime", "new")]})
    out = lml.serialize(doc)
    assert b'value="old"' not in out and out.count(b'key="jufo_starttime" value="new"') == 1


def test_a_result_xml_cannot_hold_is_never_written():
    """A value with a character XML forbids is not spliced into the bytes: libxml2 refuses it
    (an internal error, as before), rather than jufo writing a file no reader can parse."""
    from lxml import etree

    doc = lml.parse(_document("llview", False, "utf-8"))
    with pytest.raises(etree.XMLSyntaxError):
        lml.add_results(doc, {"a": [("jufo_reason", "bell \x07")]})
        lml.serialize(doc)


def test_a_result_value_beyond_libxml2s_default_limit_is_written():
    """The new data are parsed from jufo's own text without libxml2's 10 MB limit on one
    value: a nodelist of a job on a million nodes is longer than that."""
    raw = snapshot({"a": waiting(2, 10)})
    doc = lml.parse(raw)
    value = "(n0000001,48)" * 1_000_000  # 13 MB
    lml.add_results(doc, {"a": [("jufo_nodelist", value)]})
    assert [o.data["jufo_nodelist"] for o in doc.objects if o.id == "a"] == [value]
    assert f'key="jufo_nodelist" value="{value}"'.encode() in lml.serialize(doc)


def test_libxml2_out_of_memory_while_adding_results_is_a_memory_error(monkeypatch):
    """libxml2 reports running out of memory as a syntax error (code 2); parsing the new
    data's text passes that on as MemoryError, which the command reports in one line."""
    from lxml import etree

    doc = lml.parse(_document("prefixed", False, "utf-8"))  # prefixed data are built as elements

    def starved(*args, **kwargs):
        raise etree.XMLSyntaxError("unknown error", 2, 0, 0)

    monkeypatch.setattr(lml.etree, "fromstring", starved)
    with pytest.raises(MemoryError):
        lml.add_results(doc, {"a": [("jufo_starttime", "12:00")]})
