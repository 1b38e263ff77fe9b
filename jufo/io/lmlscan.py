"""A fast reader for raw LML in the plain layout LLview and jufo write, keeping byte positions.

``lml.parse`` tries this first. It reads the objects and their key/value data without a tree
and records where each info and its last data lie in the bytes, so results can be spliced
into the original bytes without building and serializing a tree (KTH's 28,000 jobs: reading,
writing and freeing 2.0 → 1.0 s). Two ways, the first that applies:

- ``_layout``: the exact layout LLview and ``lml.build`` write (objects, then infos of data,
  attributes in their usual order) by regular expressions over the text. They match every
  character inside the root and admit no character or reference XML forbids, so expat, with
  no element handlers, need only read what lies outside: the prolog, the root's tags and what
  follows them (``_well_formed_around``; KTH's 12.8 MB: 0.066 s → under 0.01 s);
- ``_walk``: any other document, by expat with one Python call per element start and end.

Anything neither handles the way the lxml reader does (a DOCTYPE, another encoding than
UTF-8, a syntax error, a problem to report) makes it give up, and the lxml reader decides: it
is the reference, this only a shortcut for the common case.
"""

from __future__ import annotations

import re
import xml.parsers.expat as expat
from dataclasses import dataclass

LML_NS = "http://eclipse.org/ptp/lml"
ACCEPTED_NAMESPACES = (LML_NS, "http://www.llview.de", "")  # "": none
RESULT_PREFIX = "jufo_"  # the keys jufo writes
MAX_DEPTH = 256  # libxml2 refuses deeper documents without its huge option: so does lml.parse
_TAG = re.compile(rb"""<[^>"']*(?:(?:"[^"]*"|'[^']*')[^>"']*)*>""")  # one tag of a well-formed document


class _GiveUp(Exception):
    """The document needs the lxml reader."""


@dataclass(slots=True)
class Info:
    """One ``info`` element: its object id, its data, and where it lies in the bytes.

    ``plain`` says the info holds only unqualified ``data`` children (no comments, other
    elements or CDATA) with any ``jufo_`` data after all others: results can go in by bytes.
    In such an info every ``<`` starts a data tag, so its data are found from its end."""

    oid: str
    start: int  # byte offset of the info's start tag
    values: dict[str, str]
    end: int = -1  # byte offset of its end tag (for an empty-element info, just after it)
    count: int = 0  # data children
    ends: tuple[int, int] = (-1, -1)  # where its last two children end, if they are empty-element tags
    first_result: int = -1  # index of the first jufo_ data among them, -1: none
    plain: bool = True
    regular: bool = False  # read by ``_layout``: its children are empty data tags with white space between


@dataclass
class Scan:
    """What ``scan`` read: ``(id, type, name)`` per object, and the infos, both in document order."""

    objects: list[tuple[str, str, str | None]]
    infos: list[Info]
    inner: tuple[int, int] = (-1, -1)  # ``_layout``'s: from the root's start tag's end to its end tag's start


def scan(raw: bytes) -> Scan | None:
    """The objects and infos of ``raw``, or None where the lxml reader must decide (see the
    module docstring). O(len(raw))."""
    if raw[:2] in (b"\xfe\xff", b"\xff\xfe") or b"\0" in raw[:4]:
        return None  # UTF-16 or UTF-32: offsets and the results' encoding would differ
    prolog = _PROLOG.match(raw)
    found = _layout(raw, prolog.end()) if prolog is not None else None
    if found is None or not _well_formed_around(raw, prolog.end(), found):
        root = _check(raw)
        if root is None:
            return None
        found = _layout(raw, root) if prolog is None or root != prolog.end() else None
        if found is None:
            found = _walk(raw)
    if found is None or len({oid for oid, _, _ in found.objects}) != len(found.objects):
        return None  # (the same id twice: the lxml reader reports it)
    return found


def _declaration(version: str, encoding: str | None, _standalone: int) -> None:
    if version != "1.0" or encoding is not None and encoding.upper() not in ("UTF-8", "UTF8"):
        raise _GiveUp  # (expat reads any version; libxml2 only digits, and 1.1 as 1.1)


def _give_up(*_args) -> None:
    raise _GiveUp


def _parser() -> expat.XMLParserType:
    """An expat parser, with namespaces, that gives up on a DOCTYPE, an XML version other
    than 1.0 and an encoding other than UTF-8."""
    parser = expat.ParserCreate(namespace_separator="}")
    parser.XmlDeclHandler = _declaration
    parser.StartDoctypeDeclHandler = _give_up
    return parser


def _parsed(parser: expat.XMLParserType, raw: bytes) -> bool:
    """Did ``parser`` read all of ``raw`` without an error or giving up? Its element handlers
    are dropped after, as they may hold the parser."""
    try:
        parser.Parse(raw, True)
    except (_GiveUp, expat.ExpatError, ValueError, RecursionError):
        return False
    finally:
        parser.StartElementHandler = parser.EndElementHandler = None
    return True


def _check(raw: bytes) -> int | None:
    """Where the root element starts, if expat finds ``raw`` a well-formed LML document in
    UTF-8 without a DOCTYPE; else None. Only the root's start calls Python."""
    parser = _parser()
    found: list[int] = []

    def root(name: str, _attrs: dict[str, str]) -> None:
        namespace, _, local = name.rpartition("}")
        if local != "lgui" or namespace not in ACCEPTED_NAMESPACES:
            raise _GiveUp
        found.append(parser.CurrentByteIndex)
        parser.StartElementHandler = None

    parser.StartElementHandler = root
    return found[0] if _parsed(parser, raw) and found else None


# what may come before the root (a declaration, comments, processing instructions, white
# space), up to the root's start: a guess that ``_well_formed_around`` has expat confirm
# (atomic and possessive: no backtracking, so a long prolog that fails costs linear time)
_PROLOG = re.compile(rb"(?:<\?xml[ \t\r\n][^?]*\?>)?(?>[ \t\r\n]+|<!--.*?-->|<\?.*?\?>)*+(?=<[^!?/])", re.S)


def _well_formed_around(raw: bytes, root: int, found: Scan) -> bool:
    """Is ``raw`` well-formed, given that ``_layout`` matched everything between the end of
    the root's start tag and the start of its end tag? Expat reads the rest, the root
    emptied (``_check``: it must start at ``root``); the references inside must be to
    characters XML allows (``_layout`` checked that, and its expressions admit no other
    character XML forbids).  O(what lies outside)."""
    inner, closing = found.inner
    return _check(raw[:inner] + raw[closing:]) == root


def _references_allowed(text: str, start: int) -> bool:
    """Does every ``&`` in ``text`` from ``start`` on begin a reference to a character XML
    allows? O(len(text)) in C, and O(references)."""
    references = _REFERENCE.findall(text, start)
    return len(references) == text.count("&", start) and all(_allowed(reference) for reference in references)


def _allowed(reference: str) -> bool:
    """Is the character reference ``#…`` (or a named one) to a character XML 1.0 allows?

    >>> [_allowed(r) for r in ("amp", "#10", "#x41", "#0", "#xD800", "#xFFFE", "#x110000", "#1114111")]
    [True, True, True, False, False, False, False, True]
    """
    if reference[0] != "#":
        return True
    code = int(reference[2:], 16) if reference[1] == "x" else int(reference[1:])
    return code in (0x9, 0xA, 0xD) or 0x20 <= code <= 0xD7FF or 0xE000 <= code <= 0xFFFD or 0x10000 <= code <= 0x10FFFF


_W = r"[ \t\r\n]"  # XML's white space (``\s`` would take Unicode's too)
# a value without white space to normalize (references are decoded) or a character XML forbids
_V = r'"([^"<\t\r\n\x00-\x08\x0b\x0c\x0e-\x1f]*)"'
_OBJECTS = re.compile(f"{_W}*<objects{_W}*>")
_INFORMATION = re.compile(f"{_W}*</objects{_W}*>{_W}*<information{_W}*>")
_OBJECT = re.compile(f"{_W}*<object{_W}+id={_V}{_W}+name={_V}{_W}+type={_V}{_W}*/>")
_QUOTED = r'"[^"<\t\r\n\x00-\x08\x0b\x0c\x0e-\x1f]*"'  # the same, not captured
_INFO = re.compile(f"{_W}*(<info{_W}+oid={_V}(?:{_W}+type={_QUOTED})?{_W}*>)"
                   f"((?:{_W}*<data{_W}+key={_QUOTED}{_W}+value={_QUOTED}{_W}*/>)*){_W}*(</info{_W}*>)")
_DATA = re.compile(f"<data{_W}+key={_V}{_W}+value={_V}{_W}*/>")
_REFERENCE = re.compile("&(#x[0-9a-fA-F]+|#[0-9]+|lt|gt|amp|quot|apos);")  # all a well-formed
_NAMED = {"lt": "<", "gt": ">", "amp": "&", "quot": '"', "apos": "'"}  # document without a DTD has


def _unescape(text: str) -> str:
    """An attribute value's references replaced by their characters.

    >>> print(_unescape("&lt;b&gt; &amp;#10; &#x41;&#66;&quot;&apos;"))
    <b> &#10; AB"'
    """
    if "&" not in text:
        return text
    return _REFERENCE.sub(lambda m: _NAMED.get(m.group(1)) or chr(
        int(m.group(1)[2:], 16) if m.group(1)[1] == "x" else int(m.group(1)[1:])), text)


def _layout(raw: bytes, root: int) -> Scan | None:
    """LLview's exact layout by regular expressions over the text, or None if the document
    is laid out otherwise. Only: the root (no default namespace), ``objects`` holding
    ``<object id name type/>`` tags, then ``information`` holding ``<info oid [type]>``
    elements of ``<data key value/>`` tags, values without white space but blanks, and white
    space between. Every character inside the root is matched, so in a well-formed document
    (``_check``) these are exactly its elements. One match per object and info, one
    ``findall`` per info's data."""
    match = _TAG.match(raw, root)
    if match is None or not raw.isascii():
        return None  # (in other text, offsets in the text would not be offsets in the bytes)
    text = raw.decode("ascii")
    head = text[root:match.end()]
    qname = re.match(r"<([^ \t\r\n/>]+)", head)
    if qname is None or re.search(f"{_W}xmlns{_W}*=", head):
        return None  # a default namespace: the data would be qualified
    pos = match.end()
    opened = _OBJECTS.match(text, pos)
    if opened is None:
        return None
    pos = opened.end()
    objects: list[tuple[str, str, str | None]] = []
    references = "&" in text  # (usually none at all: then no tag or value needs a look for them)
    if references and not _references_allowed(text, match.end()):
        return None  # (one that is not a character's: an undeclared entity, a bare &, NUL...)
    while (obj := _OBJECT.match(text, pos)) is not None:
        oid, name, kind = obj.groups() if not references or "&" not in obj.group() else map(_unescape, obj.groups())
        if not oid or not kind:
            return None
        objects.append((oid, kind, name))
        pos = obj.end()
    between = _INFORMATION.match(text, pos)
    if between is None:
        return None
    pos = between.end()
    infos: list[Info] = []
    marked = f'key="{RESULT_PREFIX}'
    find, rfind = text.find, text.rfind
    while (block := _INFO.match(text, pos)) is not None:  # (once per info: as few calls as can be)
        first, last = block.span(3)
        pairs = _DATA.findall(text, first, last)
        referenced = references and find("&", first, last) >= 0
        if referenced:
            pairs = [(_unescape(key), _unescape(value)) for key, value in pairs]
        values = dict(pairs)
        if "" in values:
            del values[""]  # (a data without a key is no key/value pair)
        count, oid = len(pairs), block.group(2)
        if count > 1:  # where the last data's indentation starts: after the data before it
            ends = (len(text[first:rfind("<", first, last)].rstrip(" \t\r\n")) + first, last)
        else:
            ends = (-1, last) if count else (-1, -1)
        if references and "&" in oid:
            oid = _unescape(oid)
        info = Info(oid, block.start(1), values, block.start(4), count, ends, -1, True, True)
        if referenced or find(marked, first, last) >= 0:
            keys = [key for key, _ in pairs]
            results = [key.startswith(RESULT_PREFIX) for key in keys]
            if any(results):
                info.first_result = results.index(True)
                info.plain = all(results[info.first_result:])
        infos.append(info)
        pos = block.end()
    closed = re.compile(f"{_W}*</information{_W}*>{_W}*(</{re.escape(qname.group(1))}{_W}*>)").match(text, pos)
    if closed is None:  # (after the root's end, expat allows only comments and the like)
        return None
    return Scan(objects, infos, (match.end(), closed.start(1)))


def _walk(raw: bytes) -> Scan | None:
    """Any document ``_check`` passed (its root is LML's), by expat with one Python call per
    element start and end; inside an info, other handlers take over that do little more than
    store the key and value."""
    parser = _parser()
    objects: list[tuple[str, str, str | None]] = []
    infos: list[Info] = []
    depth = 0
    section = ""  # local name of the element under the root that the parser is in
    info: Info | None = None  # the info being read
    values: dict[str, str] = {}
    inner = count = 0  # open elements inside the info; its data so far
    ends = (-1, -1)
    first_result = -1
    plain = True

    def start(name: str, attrs: dict[str, str]) -> None:
        nonlocal depth, section, info, values, inner, count, first_result, plain, ends
        depth += 1
        if depth == 3:
            if section == "information" and name.rpartition("}")[2] == "info":
                info = Info(attrs.get("oid", ""), parser.CurrentByteIndex, {})
                values, inner, count, first_result, plain, ends = info.values, 0, 0, -1, True, (-1, -1)
                infos.append(info)
                parser.StartElementHandler, parser.EndElementHandler = in_info
            elif section == "objects" and name.rpartition("}")[2] == "object":
                oid, kind = attrs.get("id"), attrs.get("type")
                if not oid or not kind:
                    raise _GiveUp  # a problem: the lxml reader reports it
                objects.append((oid, kind, attrs.get("name")))
        elif depth == 2:
            section = name.rpartition("}")[2]
        elif depth > MAX_DEPTH:
            raise _GiveUp

    def end(_name: str) -> None:
        nonlocal depth, section
        depth -= 1
        if depth == 1:
            section = ""

    def child(name: str, attrs: dict[str, str]) -> None:
        """An element inside an info: a data child is the hot path."""
        nonlocal inner, count
        inner += 1
        if name == "data" and inner == 1:
            key = attrs.get("key")
            if key:
                values[key] = attrs.get("value", "")
                if key.startswith(RESULT_PREFIX):
                    result(count)
                elif first_result >= 0:
                    odd()  # an older result before other data
            elif first_result >= 0:
                odd()
            count += 1
        else:
            other(name, attrs)

    def result(index: int) -> None:
        nonlocal first_result
        if first_result < 0:
            first_result = index

    def odd() -> None:
        nonlocal plain
        plain = False

    def other(name: str, attrs: dict[str, str]) -> None:
        """Not an unqualified data child: the info is not plain; qualified data are read."""
        nonlocal count
        odd()
        if depth + inner > MAX_DEPTH:
            raise _GiveUp
        if inner == 1 and name.endswith("}data"):  # (in any namespace, as lxml reads them)
            key = attrs.get("key")
            if key:
                values[key] = attrs.get("value", "")
            count += 1

    def child_end(_name: str) -> None:
        nonlocal inner, depth, info, ends
        if inner:
            inner -= 1
            if not inner:  # (after an empty-element tag expat is just past it)
                ends = ends[1], parser.CurrentByteIndex
            return
        assert info is not None
        info.end, info.count, info.first_result, info.plain = parser.CurrentByteIndex, count, first_result, plain
        info.ends = ends
        info = None
        depth -= 1
        parser.StartElementHandler, parser.EndElementHandler = outside

    def inside(*_args) -> None:  # a comment, processing instruction or CDATA section
        nonlocal plain
        if info is not None:
            plain = False

    outside, in_info = (start, end), (child, child_end)  # the handlers, switched at each info
    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CommentHandler = inside
    parser.ProcessingInstructionHandler = inside
    parser.StartCdataSectionHandler = inside
    done = _parsed(parser, raw)
    outside = in_info = ()  # (the handlers hold each other through these: free them now, not at a collection)
    return Scan(objects, infos) if done else None


def layout(raw: bytes, info: Info) -> tuple[int, int, str] | None:
    """Where results go in a plain info: ``(after its last data that is not a result, after
    its last data, the white space before that data)``, or None unless the info is plain with
    such a data child, and its data children, back to the one before it, are empty-element
    tags. In a plain info every ``<`` starts one of its data tags, so they are found from its
    end: O(results + 2) tags; without results, their ends are known from the scan."""
    kept = info.first_result if info.first_result >= 0 else info.count
    if not info.plain or kept == 0:
        return None
    if kept == info.count:  # no results yet: the usual case
        before, at = info.ends
        last = raw.rfind(b"<", info.start + 1, at)
        if info.regular and kept >= 2:  # (``_layout``'s expression matched these tags and the blanks between)
            return at, at, raw[before:last].decode("ascii")
        if not _empty_tag(raw, last, at):
            return None
        if kept >= 2:
            previous = raw.rfind(b"<", info.start + 1, last)
            gap_from = before if _empty_tag(raw, previous, before) else -1
        else:
            match = _TAG.match(raw, info.start)
            gap_from = match.end() if match else -1
        if gap_from < 0 or not blank(raw, gap_from, last):
            return None
        return at, at, raw[gap_from:last].decode("ascii")
    starts: list[int] = []
    pos = info.end
    for _ in range(info.count - kept + min(kept, 2)):
        pos = raw.rfind(b"<", info.start + 1, pos)
        if pos < 0 or raw[pos + 1:pos + 2] == b"/":  # an end tag: a data element with content
            return None
        starts.append(pos)
    last, stop = starts[info.count - kept], tag_end(raw, starts[0])
    at = tag_end(raw, last)
    if kept >= 2:
        gap_from = tag_end(raw, starts[-1])
    else:
        match = _TAG.match(raw, info.start)
        gap_from = match.end() if match else -1
    if min(at, stop, gap_from) < 0 or not blank(raw, gap_from, last):
        return None
    return at, stop, raw[gap_from:last].decode("ascii")


def _empty_tag(raw: bytes, start: int, end: int) -> bool:
    """Is ``raw[start:end]`` one empty-element tag? Where its only ``>`` is the last byte it
    is, without a regex; a ``>`` in a value, or an element with text (``<data ...>/></data>``,
    whose end expat reports at ``</data>``), takes the regex."""
    if start < 0 or raw[end - 2:end] != b"/>":
        return False
    return raw.find(b">", start, end) == end - 1 or tag_end(raw, start) == end


def tag_end(raw: bytes, start: int) -> int:
    """Where the tag starting at ``start`` ends, or -1 unless it is an empty-element tag."""
    match = _TAG.match(raw, start)
    return match.end() if match and raw[match.end() - 2:match.end()] == b"/>" else -1


def blank(raw: bytes, start: int, end: int) -> bool:
    """Only white space between ``start`` and ``end``? (The other ASCII white space that
    ``strip`` removes, form feed and vertical tab, cannot occur in XML.)"""
    return not raw[start:end].strip()
