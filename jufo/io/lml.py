"""Read a raw LML document into objects with key/value data, and write results back into it.

The document is kept as parsed: writing only adds ``data`` elements to job infos, so unknown
object types, tables, comments, order and namespaces survive unchanged. LLview's plain layout
is read by the scanner (``lmlscan``) and the results spliced into its bytes; anything else, and
every error, goes through an lxml tree. Element names are matched by local name, which accepts
the LML namespace, the old LLview one and none.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field

from lxml import etree

from . import lmlscan
from .errors import InputError
from .lmlscan import LML_NS, RESULT_PREFIX  # (defined once there, used as lml's everywhere)
from .values import MAX_INPUT_BYTES, read_limited

ACCEPTED_NAMESPACES = tuple(ns or None for ns in lmlscan.ACCEPTED_NAMESPACES)  # (lxml: None for none)


@dataclass
class LmlObject:
    """One ``objects/object`` element with its merged ``info/data`` key/value pairs."""

    id: str
    type: str
    name: str | None
    index: int  # position among all objects, document order
    data: dict[str, str] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """How messages name this object, e.g. ``job j42``."""
        return f"{self.type} {self.id}"


class Document:
    """A parsed LML file: its objects in document order, and the lxml tree.

    A document the scanner read (``lmlscan``) keeps its bytes instead and builds the tree
    only when something asks for it (``tree``, ``infos``): ``predict`` splices its results
    into the bytes (``edits``) and never needs one."""

    def __init__(self, tree: etree._ElementTree | None, objects: list[LmlObject],
                 infos: dict[str, list[etree._Element]] | None, prolog: bytes | None, epilog: bytes | None,
                 unknown_info_ids: list[str] | None = None, source: str = "input") -> None:
        self._tree = tree
        self.objects = objects
        self._infos = infos  # info elements per object id, document order
        self.prolog = prolog  # the original bytes before the root element, kept verbatim (None: a DOCTYPE)
        self.epilog = epilog  # the original bytes after it
        self.unknown_info_ids = unknown_info_ids if unknown_info_ids is not None else []
        self.source = source
        # results not yet in the tree: ``(info, pairs, last data, text after it)``, spliced into
        # the serialized tree by ``serialize`` (see ``_append_data``)
        self.pending: list[tuple[etree._Element, list[tuple[str, str]], etree._Element, str]] = []
        # a scanned document: its bytes, its infos per object id, and the results spliced into
        # them as ``(start, end, text)``: the bytes from start to end are replaced by the text
        self.raw: bytes | None = None
        self.places: dict[str, list[lmlscan.Info]] | None = None
        self.edits: list[tuple[int, int, str]] | None = None
        self.added: dict[str, list[tuple[str, str]]] | None = None  # the results the edits hold

    @property
    def tree(self) -> etree._ElementTree:
        """The lxml tree (parsed now if the document was scanned)."""
        if self._tree is None:
            self._load()
        assert self._tree is not None
        return self._tree

    @property
    def infos(self) -> dict[str, list[etree._Element]]:
        """The info elements per object id, document order (parsed now if the document was scanned)."""
        if self._infos is None:
            self._load()
        assert self._infos is not None
        return self._infos

    def _load(self) -> None:
        """Parse the scanned bytes into a tree, with the results spliced so far built into it."""
        assert self.raw is not None
        full = _parse_tree(self.raw, self.source)
        self._tree, self._infos, self.prolog, self.epilog = full.tree, full.infos, full.prolog, full.epilog
        added, self.places, self.edits, self.added = self.added, None, None, None
        if added is not None:
            _add_to_tree(self, added, list(self._infos))

    def of_type(self, kind: str) -> list[LmlObject]:
        """Objects of one type, document order."""
        return [o for o in self.objects if o.type == kind]


def _local(el: etree._Element) -> str | None:
    tag = el.tag
    if not isinstance(tag, str):
        return None  # comment or processing instruction
    return tag.rpartition("}")[2]


def _inside(root: etree._Element, outer: str, inner: str) -> list[etree._Element]:
    """Elements named ``inner`` in the elements named ``outer`` directly under ``root``, in order.
    (A list, not a generator: a generator left open by MemoryError complains at exit.)"""
    return [el for container in root if _local(container) == outer for el in container if _local(el) == inner]


def _parser(huge_tree: bool = False) -> etree.XMLParser:
    """No DTD loading, no network, no entity expansion; ``huge_tree`` off keeps libxml2's
    limits (lifted only for jufo's own text, see ``_append_data``)."""
    return etree.XMLParser(
        resolve_entities=False, no_network=True, load_dtd=False, dtd_validation=False, huge_tree=huge_tree
    )


def parse(raw: bytes, source: str = "input", scan: bool = True) -> Document:
    """Parse LML bytes; InputError (exit 2) for anything that is not a raw LML document.
    The scanner reads the common case (``lmlscan``); the rest, errors included, lxml, which
    also reads all when ``scan`` is false (for a caller that needs the tree anyway)."""
    found = lmlscan.scan(raw) if scan else None
    if found is None:
        return _parse_tree(raw, source)
    objects = [LmlObject(oid, kind, name, i) for i, (oid, kind, name) in enumerate(found.objects)]
    by_id = {obj.id: obj for obj in objects}
    places: dict[str, list[lmlscan.Info]] = {}
    unknown: list[str] = []
    for info in found.infos:
        obj = by_id.get(info.oid)
        if obj is None:
            unknown.append(info.oid)
            continue
        places.setdefault(info.oid, []).append(info)
        if obj.data:
            obj.data.update(info.values)  # later info wins for a repeated key
        else:
            obj.data = info.values
    doc = Document(None, objects, None, None, None, unknown, source)
    doc.raw, doc.places = raw, places
    return doc


def _parse_tree(raw: bytes, source: str) -> Document:
    """``parse`` by lxml: the reference, and what reports a bad document."""
    try:
        tree = etree.ElementTree(etree.fromstring(raw, _parser()))
    except etree.XMLSyntaxError as err:
        if _out_of_memory(err):
            raise MemoryError(f"parsing {source}") from None  # libxml2 ran out: not the input's fault
        raise InputError(source, None, None, f"not well-formed XML: {err}") from None
    dtd = tree.docinfo.internalDTD
    if dtd is not None and any(True for _ in dtd.iterentities()):
        raise InputError(source, "DOCTYPE", None, "declares XML entities; jufo does not expand entities")
    root = tree.getroot()
    if _local(root) != "lgui":
        raise InputError(source, "root element", _local(root), "expected 'lgui' (an LML file)")
    namespace = etree.QName(root).namespace
    if namespace not in ACCEPTED_NAMESPACES:
        raise InputError(source, "namespace", namespace, f"expected {LML_NS!r}, 'http://www.llview.de' or none")

    objects: list[LmlObject] = []
    by_id: dict[str, LmlObject] = {}
    for el in _inside(root, "objects", "object"):
        oid, kind = el.get("id"), el.get("type")
        if not oid:
            raise InputError(f"object #{len(objects) + 1}", "id", oid, "every object needs an id")
        if not kind:
            raise InputError(f"object {oid}", "type", kind, "every object needs a type")
        if oid in by_id:
            raise InputError(f"{kind} {oid}", "id", oid, "the same id is used by two objects")
        obj = LmlObject(oid, kind, el.get("name"), len(objects))
        objects.append(obj)
        by_id[oid] = obj

    infos: dict[str, list[etree._Element]] = {}
    unknown: list[str] = []
    for info in _inside(root, "information", "info"):
        oid = info.get("oid", "")
        obj = by_id.get(oid)
        if obj is None:
            unknown.append(oid)
            continue
        infos.setdefault(oid, []).append(info)
        values = obj.data
        for data in info.iterchildren("{*}data"):  # in any namespace or none; C skips the rest
            key = data.get("key")
            if key:
                values[key] = data.get("value", "")  # later info wins for a repeated key
    if tree.docinfo.doctype or tree.docinfo.internalDTD is not None:
        # a DOCTYPE may hide '>', '[' and comments in quotes and its internal subset: let the
        # parser, which knows where it ends, write the prolog (see ``serialize``)
        return Document(tree, objects, infos, None, None, unknown, source)
    start, end = _root_span(raw)
    return Document(tree, objects, infos, raw[:start], raw[end:], unknown, source)


def _out_of_memory(err: etree.XMLSyntaxError) -> bool:
    """Did libxml2 fail for want of memory (it says so as a syntax error)?"""
    return err.code == 2 or any(e.type_name == "ERR_NO_MEMORY" for e in err.error_log)


def _root_span(raw: bytes) -> tuple[int, int]:
    """Byte offsets where the root element starts and ends: what lies outside is only the
    XML declaration, DOCTYPE, comments, processing instructions and white space."""
    pos, n = 0, len(raw)
    while pos < n:
        if raw[pos:pos + 1].isspace() or raw.startswith(b"\xef\xbb\xbf", pos):
            pos += 1 if raw[pos:pos + 1].isspace() else 3
        elif raw.startswith(b"<?", pos):
            pos = raw.index(b"?>", pos) + 2
        elif raw.startswith(b"<!--", pos):
            pos = raw.index(b"-->", pos) + 3
        elif raw.startswith(b"<!DOCTYPE", pos):
            bracket, close = raw.find(b"[", pos), raw.index(b">", pos)
            if 0 <= bracket < close:
                close = raw.index(b">", raw.index(b"]", bracket))
            pos = close + 1
        else:
            break
    end = n
    while end > pos:
        if raw[end - 1:end].isspace():
            end -= 1
        elif raw.endswith(b"-->", 0, end):
            end = raw.rindex(b"<!--", 0, end)
        elif raw.endswith(b"?>", 0, end):
            end = raw.rindex(b"<?", 0, end)
        else:
            break
    return pos, end


def from_objects(objects: list[tuple[str, str, dict[str, str]]]) -> Document:
    """A document's objects without the XML, for data made in memory (trace replays): the
    same objects ``parse`` would give for ``build(objects)``, minus the parsing."""
    objs = [LmlObject(oid, kind, oid, i, dict(data)) for i, (oid, kind, data) in enumerate(objects)]
    return Document(etree.ElementTree(etree.Element(f"{{{LML_NS}}}lgui")), objs, {}, b"", b"")


def read(path: str, limit: int = MAX_INPUT_BYTES, scan: bool = True) -> Document:
    """Read and parse ``path`` (``-`` is standard input); the file itself is never modified.
    Devices are refused (``/dev/zero`` never ends) and files larger than ``limit`` bytes too."""
    if path == "-":
        import sys

        if sys.stdin is None:
            raise InputError("-", None, None, "standard input is closed")
        raw = read_limited(sys.stdin.buffer, "stdin", limit)
    else:
        try:
            with open(path, "rb") as fh:
                mode = os.fstat(fh.fileno()).st_mode
                if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
                    raise InputError(path, None, None, "a device, not a file")
                raw = read_limited(fh, path, limit)
        except OSError as err:
            raise InputError(path, None, None, f"cannot read: {err.strerror}") from None
    return parse(raw, "stdin" if path == "-" else path, scan)


def read_all(paths: list[str], limit: int = MAX_INPUT_BYTES, scan: bool = True) -> Document:
    """Read one file, or several merged into one document as LML_da's combine step would
    (LLview 2 writes jobs, nodes, system info, reservations and classes to separate files)."""
    scan = scan and len(paths) == 1  # merging works on trees: read them as trees at once
    docs = [(path, read(path, limit, scan)) for path in paths]
    return docs[0][1] if len(docs) == 1 else merge(docs)


def merge(docs: list[tuple[str, Document]]) -> Document:
    """The first document with the objects and infos of the others appended, in order.

    Objects are matched by id: the same id in two files must name the same type and name,
    and a key given for it in both must have the same value; every ``system_time`` must be
    the same. A clash is an InputError naming both files. From the second file on only
    objects and their infos are taken (as LML_da's combiner does); the first file's other
    elements, prolog and layout are kept.
    """
    first_name, base = docs[0]
    root = base.tree.getroot()
    objects_el = _container(root, "objects")
    information = _information_element(root)
    where: dict[str, str] = {o.id: first_name for o in base.objects}
    by_id: dict[str, LmlObject] = {o.id: o for o in base.objects}
    objects = list(base.objects)
    system_time = next(((first_name, o.data["system_time"]) for o in base.of_type("system")
                        if "system_time" in o.data), None)
    for name, doc in docs[1:]:
        for obj, el in zip(doc.objects, _inside(doc.tree.getroot(), "objects", "object")):
            if obj.type == "system" and "system_time" in obj.data:
                if system_time is not None and system_time[1] != obj.data["system_time"]:
                    raise InputError(obj.label, "system_time", obj.data["system_time"],
                                     f"clashes with {system_time[1]!r} in {system_time[0]} ({name})")
                system_time = system_time or (name, obj.data["system_time"])
            known = by_id.get(obj.id)
            if known is None:
                merged = LmlObject(obj.id, obj.type, obj.name, len(objects), dict(obj.data))
                objects.append(merged)
                by_id[obj.id] = merged
                where[obj.id] = name
                _append_keeping_layout(objects_el, el)
            else:
                if (known.type, known.name) != (obj.type, obj.name):
                    raise InputError(obj.label, "id", obj.id, f"names {known.type} {known.name!r} in "
                                     f"{where[obj.id]} but {obj.type} {obj.name!r} in {name}")
                for key, value in obj.data.items():
                    if known.data.get(key, value) != value:
                        raise InputError(obj.label, key, value, f"clashes with {known.data[key]!r} in "
                                         f"{where[obj.id]} ({name})")
                    known.data[key] = value
            for info in doc.infos.get(obj.id, ()):
                _append_keeping_layout(information, info)
                base.infos.setdefault(obj.id, []).append(info)
        base.unknown_info_ids.extend(doc.unknown_info_ids)
    return Document(base.tree, objects, base.infos, base.prolog, base.epilog,
                    [oid for oid in base.unknown_info_ids if oid not in by_id])


def _container(root: etree._Element, local: str) -> etree._Element:
    """The child ``local`` of ``root`` (``objects``), made first in the document if missing."""
    for child in root:
        if _local(child) == local:
            return child
    el = etree.Element(_sibling_tag(root, local))
    root.insert(0, el)
    return el


def _append_keeping_layout(parent: etree._Element, el: etree._Element) -> None:
    """Move ``el`` to the end of ``parent``, indented like its last child."""
    children = [c for c in parent if isinstance(c.tag, str)]
    tail = el.tail
    if children:
        el.tail = children[-1].tail
        children[-1].tail = tail if tail is not None else children[-1].tail
    parent.append(el)


def add_results(doc: Document, results: dict[str, list[tuple[str, str]]]) -> None:
    """Replace every object's earlier ``jufo_*`` data with ``results[oid]`` (keys in given order),
    in the document and in the objects' data.

    Earlier results are dropped for every job, so predicting an output file again gives the
    same file. New data elements copy the tag and indentation of their siblings. A scanned
    document gets them as text spliced into its bytes where its layout allows (``_edits``).
    """
    marked = "\0" + RESULT_PREFIX  # (keys hold no NUL: XML cannot)
    stale = [obj.id for obj in doc.objects if marked in "\0" + "\0".join(obj.data)]  # one search in C per object
    edits = _edits(doc, results, stale) if doc.places is not None else None
    if edits is not None:
        doc.edits, doc.added = edits, results
    else:
        _add_to_tree(doc, results, stale)
    by_id = {obj.id: obj for obj in doc.objects}
    for oid in stale:
        obj = by_id[oid]
        obj.data = {k: v for k, v in obj.data.items() if not k.startswith(RESULT_PREFIX)}
    for oid, pairs in results.items():
        if oid in by_id:
            by_id[oid].data.update(pairs)


def _add_to_tree(doc: Document, results: dict[str, list[tuple[str, str]]], stale: list[str]) -> None:
    """``add_results`` in the tree: the ``jufo_`` data of the infos of ``stale`` ids removed,
    the new ones appended (and left pending for ``serialize`` to splice where it can)."""
    root = doc.tree.getroot()
    doc.pending = []  # earlier results not yet written: jufo_ data too, so replaced
    for oid in stale:
        for info in doc.infos.get(oid, ()):
            for data in list(info.iterchildren("{*}data")):
                if (data.get("key") or "").startswith(RESULT_PREFIX):
                    _remove_keeping_layout(info, data)
    information = None
    targets: list[tuple[etree._Element, list[tuple[str, str]]]] = []
    for oid, pairs in results.items():
        if not pairs:
            continue
        info_list = doc.infos.get(oid)
        if not info_list:
            if information is None:
                information = _information_element(root)
            info = etree.SubElement(information, _sibling_tag(information, "info"), oid=oid)
            doc.infos[oid] = [info]
        else:
            info = info_list[-1]
        targets.append((info, pairs))
    doc.pending = _append_data(targets)


def _edits(doc: Document, results: dict[str, list[tuple[str, str]]],
           stale: list[str]) -> list[tuple[int, int, str]] | None:
    """The results as ``(start, end, text)`` edits of a scanned document's bytes, sorted, or
    None where an info is not plain (see ``lmlscan.Info``) or a value holds a character XML
    forbids (the tree path then refuses it). Each info holding results (of the ``stale``
    objects) loses them; each target's last info gets the new data after its last other one,
    indented like it.  O(pairs + results' infos)."""
    raw, places = doc.raw, doc.places
    assert raw is not None and places is not None
    targets: list[tuple[lmlscan.Info, list[tuple[str, str]]]] = []
    for oid, pairs in results.items():
        if pairs:
            infos = places.get(oid)
            if not infos:
                return None  # a new info is needed: the tree path makes it
            targets.append((infos[-1], pairs))
    escaped, allowed = _escaped(targets)
    if not allowed:
        return None
    edits: dict[int, tuple[int, int, str]] = {}  # per info, by its start
    for oid in stale:
        for info in places.get(oid, ()):
            if info.first_result >= 0:
                layout = lmlscan.layout(raw, info)
                if layout is None:
                    return None
                edits[info.start] = (layout[0], layout[1], "")
    elements, at_pair = _elements("data", escaped), 0  # every target's data tags, in order
    for info, pairs in targets:
        layout = lmlscan.layout(raw, info)
        if layout is None:
            return None
        at, stop, gap = layout
        edits[info.start] = (at, stop, gap + gap.join(elements[at_pair:at_pair + len(pairs)]))
        at_pair += len(pairs)
    return [edits[start] for start in sorted(edits)]


def _sibling_tag(parent: etree._Element, local: str) -> str:
    """The tag for a new ``local`` child: like an existing one, else in the parent's namespace
    only when the parent's children are qualified (LML's own schema leaves them unqualified)."""
    for child in parent:
        if _local(child) == local:
            return child.tag
    for child in parent:
        if isinstance(child.tag, str):
            ns = etree.QName(child).namespace
            return f"{{{ns}}}{local}" if ns else local
    return local


def _information_element(root: etree._Element) -> etree._Element:
    for child in root:
        if _local(child) == "information":
            return child
    tag = _sibling_tag(root, "information")
    information = etree.Element(tag)
    # the schema wants information right after objects (and relations)
    position = 0
    for i, child in enumerate(root):
        if _local(child) in ("request", "objects", "relations"):
            position = i + 1
    root.insert(position, information)
    return information


def _append_data(targets: list[tuple[etree._Element, list[tuple[str, str]]]],
                 splice: bool = True) -> list[tuple[etree._Element, list[tuple[str, str]], etree._Element, str]]:
    """For each ``(info, pairs)``, ``data`` elements after the info's last one, tagged and
    indented like their siblings. O(children + pairs) per info.

    Where the info has unqualified data (LLview's layout), the elements are not made at all:
    their text is returned, for ``serialize`` to splice into the bytes after the last data
    (KTH's 105,000 pairs: adding and writing 1.05 → 0.6 s, and the tree frees 0.2 s faster).
    The others are parsed from one text and moved into place: libxml2 builds them 2.5×
    faster than one ``SubElement`` call per pair."""
    prefixes: dict[str, str] = {}  # namespace URI -> prefix in the text (moving re-declares as needed)
    escaped, allowed = _escaped(targets)
    splice = splice and allowed  # a character XML forbids is never spliced in: libxml2 refuses it below
    at = 0
    parts, places, pending = [], [], []
    for info, pairs in targets:
        last, tag, between, end = _data_layout(info)
        texts, at = escaped[at:at + 2 * len(pairs)], at + 2 * len(pairs)
        namespace, _, local = tag[1:].rpartition("}") if tag[0] == "{" else ("", "", tag)
        name = f"{prefixes.setdefault(namespace, f'ns{len(prefixes)}')}:{local}" if namespace else local
        gap = _text(between)
        elements = _elements(name, texts)
        if splice and last is not None and not namespace:
            pending.append((info, pairs, last, "".join([gap + element for element in elements])))
        else:
            parts.append("<i>" + gap.join(elements) + _text(end) + "</i>")
            places.append((info, last, between))
    if not parts:
        return pending
    declarations = "".join(f' xmlns:{p}="{_attr(uri)}"' for uri, p in prefixes.items())
    # the text is jufo's own: no limit on its size (a nodelist of a million nodes passes 10 MB)
    try:
        fragment = etree.fromstring(f"<x{declarations}>{''.join(parts)}</x>", _parser(huge_tree=True))
    except etree.XMLSyntaxError as err:
        if _out_of_memory(err):
            raise MemoryError("adding the results") from None
        raise
    for (info, last, between), made in zip(places, fragment):
        if last is None or last.getnext() is None:  # the usual case: append (faster than addnext)
            if last is not None:
                last.tail = between
            info.extend(made)  # each element moves with its tail (the indentation)
        else:
            last.tail = between
            for el in reversed(made):
                last.addnext(el)
    return pending


def _escaped(targets: list[tuple[object, list[tuple[str, str]]]]) -> tuple[list[str], bool]:
    """Every key and value of the targets' pairs escaped for an attribute (``_attr_all``), and
    whether XML allows all their characters (tab, LF and CR are references by then)."""
    escaped = _attr_all([text for _, pairs in targets for pair in pairs for text in pair])
    values = "".join(escaped)
    return escaped, values.isprintable() or not _INVALID_XML.search(values)


def _elements(name: str, texts: list[str]) -> list[str]:
    """Empty ``data`` elements named ``name`` from escaped ``[key, value, key, value, ...]``."""
    return [f'<{name} key="{k}" value="{v}"/>' for k, v in zip(texts[::2], texts[1::2])]


def _data_layout(info: etree._Element) -> tuple[etree._Element | None, str, str | None, str | None]:
    """``(last data, tag of the first data, tail of the one before the last (or the info's
    text), tail of the last)`` of an info, or ``(None, tag for one, None, None)`` if it has no
    data.  An info holding only data (LLview's layout) is read by position, without a search
    for data children: three elements, not all (0.19 → 0.1 s for KTH's 28,000 infos)."""
    if len(info) > 1:
        first, last = info[0], info[-1]
        previous = last.getprevious()
        if _local(first) == _local(previous) == _local(last) == "data":
            return last, first.tag, previous.tail, last.tail
    newest = info.iterchildren("{*}data", reversed=True)
    last = next(newest, None)
    if last is None:
        return None, _sibling_tag(info, "data"), None, None
    previous = next(newest, None)
    between = info.text if previous is None else previous.tail  # the indentation of a data line
    return last, next(info.iterchildren("{*}data")).tag, between, last.tail


def _attr_all(texts: list[str]) -> list[str]:
    """``_attr`` of each of ``texts``, in one pass of C string functions over them all (they
    are joined on NUL, which no XML text holds).

    >>> _attr_all(['a<b', '', 'x\\ty'])
    ['a&lt;b', '', 'x&#9;y']
    """
    joined = "\0".join(texts)
    for char, reference in _REFERENCES:
        if char in joined:
            joined = joined.replace(char, reference)
    out = joined.split("\0") if texts else []
    return out if len(out) == len(texts) else [_attr(text) for text in texts]  # (a NUL after all)


def _text(text: str | None) -> str:
    """``text`` escaped for character data (``None``: no text); a CR as a reference, which the
    parser would otherwise turn into a line feed."""
    if not text:
        return ""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\r", "&#13;")


def _remove_keeping_layout(parent: etree._Element, el: etree._Element) -> None:
    previous = el.getprevious()
    if previous is not None:
        previous.tail = el.tail
    else:
        parent.text = el.tail
    parent.remove(el)


def serialize(doc: Document) -> bytes:
    """The document as bytes: the original prolog and epilog verbatim around the root element,
    serialized in the document's own encoding, with the pending results spliced in (or, where
    they cannot be, first built into the tree). A scanned document is its bytes with the edits."""
    if doc._tree is None:
        assert doc.raw is not None
        return _apply(doc.raw, doc.edits or [])
    if doc.pending and (doc.tree.docinfo.encoding or "UTF-8").upper() in ("UTF-8", "UTF8"):
        spliced = _serialize_spliced(doc)  # (the text is UTF-8: only there can it go in as it is)
        if spliced is not None:
            return spliced
    if doc.pending:  # another encoding, or the input holds the mark: the slow way
        _materialize(doc)
    return _serialize_tree(doc)


def _serialize_spliced(doc: Document) -> bytes | None:
    """The document with the pending texts spliced in, or None if the marks are not unique.
    Each text's place is marked in the tail of the data it follows, by a number between two
    private-use characters; the tails are restored whatever happens."""
    tails = [last.tail for _, _, last, _ in doc.pending]
    try:
        for i, (_, _, last, _) in enumerate(doc.pending):
            last.tail = f"{_MARK}{i}{_MARK_END}{last.tail or ''}"
        raw = _serialize_tree(doc)
    finally:
        for (_, _, last, _), tail in zip(doc.pending, tails):
            last.tail = tail
    return _splice(raw, [text for _, _, _, text in doc.pending])


_MARK, _MARK_END = "\ue000", "\ue001"
_MARKED = re.compile(b"\xee\x80\x80([0-9]+)\xee\x80\x81")  # a mark, UTF-8
_INVALID_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _splice(raw: bytes, texts: list[str]) -> bytes | None:
    """``raw`` with each mark ``i`` replaced by ``texts[i]``, or None unless every mark occurs
    exactly once (the texts hold no NUL, see ``_append_data``). O(len(raw) + len(texts)).

    >>> _splice(b"<a>\\xee\\x80\\x801\\xee\\x80\\x81x\\xee\\x80\\x800\\xee\\x80\\x81</a>", ["<b/>", "<c/>"])
    b'<a><c/>x<b/></a>'
    """
    parts = _MARKED.split(raw)  # text, number, text, ..., text
    numbers = parts[1::2]
    if len(numbers) != len(texts) or raw.count(_MARK.encode()) != len(texts):
        return None
    encoded = "\0".join(texts).encode().split(b"\0")  # (no text holds a NUL: XML forbids it)
    if numbers != [str(i).encode() for i in range(len(texts))]:  # not in document order
        order = [int(number) for number in numbers]
        if sorted(order) != list(range(len(texts))):
            return None
        encoded = [encoded[i] for i in order]
    parts[1::2] = encoded
    return b"".join(parts)


def _apply(raw: bytes, edits: list[tuple[int, int, str]]) -> bytes:
    """``raw`` with each sorted edit's bytes from ``start`` to ``end`` replaced by its text.
    O(len(raw) + texts).

    >>> _apply(b"<a><b/></a>", [(3, 3, "<c/>"), (7, 11, "</x>")])
    b'<a><c/><b/></x>'
    """
    if not edits:
        return raw
    encoded = "\0".join([text for _, _, text in edits]).encode().split(b"\0")  # (no text holds a NUL)
    parts, done = [], 0
    for (start, end, _), text in zip(edits, encoded):
        parts += (raw[done:start], text)
        done = end
    parts.append(raw[done:])
    return b"".join(parts)


def _materialize(doc: Document) -> None:
    """Put the pending results into the tree as elements (for what cannot be spliced)."""
    pending, doc.pending = doc.pending, []
    _append_data([(info, pairs) for info, pairs, _, _ in pending], splice=False)


def _serialize_tree(doc: Document) -> bytes:
    encoding = doc.tree.docinfo.encoding or "UTF-8"
    if doc.prolog is None or doc.epilog is None:  # a DOCTYPE: the whole document as the parser knows it
        return etree.tostring(doc.tree, encoding=encoding, xml_declaration=True,
                              doctype=doc.tree.docinfo.doctype or None)
    root = etree.tostring(doc.tree.getroot(), encoding=encoding, xml_declaration=False, with_tail=False)
    return doc.prolog + root + doc.epilog


def build(objects: list[tuple[str, str, dict[str, str]]], namespace: str | None = LML_NS) -> bytes:
    """A raw LML document from ``(id, type, data)`` triples, in the layout LLview writes.

    >>> print(build([("j1", "job", {"state": "Idle"})]).decode())  # doctest: +NORMALIZE_WHITESPACE
    <?xml version="1.0" encoding="UTF-8"?>
    <lml:lgui xmlns:lml="http://eclipse.org/ptp/lml" version="1.1">
    <objects>
    <object id="j1" name="j1" type="job"/>
    </objects>
    <information>
    <info oid="j1" type="short">
    <data key="state" value="Idle"/>
    </info>
    </information>
    </lml:lgui>
    """
    root = f'<lml:lgui xmlns:lml="{namespace}" version="1.1">' if namespace else '<lgui version="1.1">'
    lines = ['<?xml version="1.0" encoding="UTF-8"?>', root, "<objects>"]
    for oid, kind, _ in objects:
        lines.append(f'<object id="{_attr(oid)}" name="{_attr(oid)}" type="{_attr(kind)}"/>')
    lines += ["</objects>", "<information>"]
    for oid, _, data in objects:
        lines.append(f'<info oid="{_attr(oid)}" type="short">')
        lines.extend(f'<data key="{_attr(k)}" value="{_attr(str(v))}"/>' for k, v in data.items())
        lines.append("</info>")
    lines += ["</information>", "</lml:lgui>" if namespace else "</lgui>", ""]
    return "\n".join(lines).encode()


_REFERENCES = (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ('"', "&quot;"), ("\n", "&#10;"), ("\t", "&#9;"),
               ("\r", "&#13;"))  # "&" first: the others add one
_ESCAPES = str.maketrans(dict(_REFERENCES))


def _attr(text: str) -> str:
    """Text for a double-quoted attribute.

    >>> _attr('a<b & "c"')
    'a&lt;b &amp; &quot;c&quot;'
    """
    return text.translate(_ESCAPES) if any(c in text for c in '&<>"\n\t\r') else text
