"""RFC 6570 URI Templates: expansion (all four levels) and matching.

MCP servers declare resource templates such as ``test://template/{id}/data``,
``file:///{+path}``, ``search{?q,lang}`` or ``users/{id}{/rest*}``.  A server
expands them, and routes ``resources/read`` by *matching* a concrete URI back
against each template to recover the variables.

Expansion
=========

:meth:`UriTemplate.expand` implements RFC 6570 level 4 in full: the operators
none, ``+``, ``#``, ``.``, ``/``, ``;``, ``?`` and ``&``; the explode (``*``)
and prefix (``:n``) modifiers; string, list and associative-array values.  A
value is a ``str``, a sequence of ``str`` (list), a mapping of ``str`` to
``str`` (associative array) or ``None``; ``int`` and ``float`` are formatted
with ``str()``.  ``None``, an empty list and a mapping whose values are all
``None`` are *undefined* and skipped, as are ``None`` items of a list or
mapping.  Non-reserved expansion percent-encodes everything outside the
unreserved set (``A-Z a-z 0-9 - . _ ~``); ``+`` and ``#`` also keep the reserved
characters and existing ``%XX`` triplets.  Template literals are copied,
characters not allowed in a URI being percent-encoded.  A prefix modifier on a
list or mapping value is an error (RFC 6570 section 2.4.1): ``ValueError``.

Matching
========

:meth:`UriTemplate.match` is the reverse.  It is a heuristic (a template's
expansion is not in general invertible) with these rules:

* Literal parts of the template must match exactly (in their expanded form).
* ``{var}`` matches one or more characters other than ``/ ? # & ,``;
  ``{.var}`` a label without ``.``; ``{/var}`` one path segment;
  ``{;x,y}`` path-style parameters in order (``;x`` alone is ``""``).
  Expressions that start with a character (``# . / ; ? &``) are optional:
  absent ones, and trailing variables missing from a multi-variable
  expression, are left out of the result.
* ``{+var}`` and ``{#var}`` (reserved) match any characters, ``/`` included
  (not ``#`` when a fragment follows in the template, nor ``&`` in a query).
  The first reserved expression of the path is greedy: it takes everything
  between what the template before it matches, from the start of the URI, and
  what the template after it matches, from the end.  So ``{+path}/{name}/edit``
  gives ``a/b`` and ``c`` for ``a/b/c/edit``.
* Every other variable stops where the text that follows it in the template
  (a literal, or the operator character of the next expression) first
  appears: ``{name}.json`` gives ``a.b`` for ``a.b.json``, ``{a}-{b}`` gives
  ``x`` and ``y-z`` for ``x-y-z``.  After the greedy expression, the same
  holds backwards from the end, with the text that precedes the variable.  Two
  expressions with nothing between them cannot both get a value when the first
  one can absorb the second (``{a}{b}`` never matches).
* Such a run of characters is never revisited, which keeps matching linear in
  the length of the URI whatever the input; only whether each optional
  expression is present is tried both ways, a cost set by the template alone.
* If the template has a query part, the URI is split at its first ``?``.
  ``{?x,y}`` and ``{&x}`` at the end of the template read the query string as
  ``key=value`` pairs in any order: unknown parameters are ignored, missing
  ones are absent from the result, a repeated key gives its first value
  (``x=`` and a bare ``x`` give ``""``).  ``+`` is not read as a space.  A
  fragment after such a query does not match.  Query expressions elsewhere in
  the template match in order.
* Exploded lists (``{/list*}``, ``{.list*}``, ``{list*}``, ``{;list*}``,
  ``{?list*}``) become lists; everything else is a string.  All values are
  percent-decoded (UTF-8, invalid sequences replaced).
* ``{var:n}`` matches up to ``n`` characters, a percent-encoded UTF-8
  character counting as one.
* A variable that appears twice must match the same value both times.

Not recoverable: associative arrays (the keys of an exploded mapping are
unknown); non-exploded lists, which come back as one comma-joined string (and
do not match ``{list}``, where ``,`` is excluded); a value containing the text
next to it in the template; reserved values containing ``%XX`` sequences
(expansion keeps them as they are, matching decodes them).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Final, TypeAlias
from urllib.parse import quote, unquote

__all__ = ["UriTemplate"]

Value: TypeAlias = "str | Sequence[str] | Mapping[str, str] | None"
MatchResult: TypeAlias = "dict[str, str | list[str]]"

# operator: (first, separator, named, if-empty, allow reserved)
_OPS: Final = {
    "": ("", ",", False, "", False),
    "+": ("", ",", False, "", True),
    "#": ("#", ",", False, "", True),
    ".": (".", ".", False, "", False),
    "/": ("/", "/", False, "", False),
    ";": (";", ";", True, "", False),
    "?": ("?", "&", True, "=", False),
    "&": ("&", "&", True, "=", False),
}
_FUTURE_OPS: Final = "=,!@|"
_RESERVED_OPS: Final = frozenset("+#")
_QUERY_OPS: Final = frozenset("?&")
_PREFIXED_OPS: Final = frozenset("#./;?&")
_VARSPEC: Final = re.compile(
    r"((?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2})(?:\.?(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2}))*)"
    r"(?::([1-9][0-9]{0,3})|(\*))?"
)
_VARNAME_START: Final = re.compile(r"[A-Za-z0-9_%]")
_RESERVED_SAFE: Final = ":/?#[]@!$&'()*+,;=%"
_LONE_PCT: Final = re.compile(r"%(?![0-9A-Fa-f]{2})")
_PCT_OR_CHAR: Final = re.compile(r"%[0-9A-Fa-f]{2}|.", re.S)


class _Expr:
    __slots__ = ("op", "specs")

    def __init__(self, op: str, specs: tuple[tuple[str, int, bool], ...]) -> None:
        self.op = op
        self.specs = specs  # (name, prefix length or 0, explode)


_Part: TypeAlias = "str | _Expr"


# -- parsing -----------------------------------------------------------------


def _parse(template: str) -> list[_Part]:
    def fail(what: str, pos: int) -> ValueError:
        return ValueError(f"invalid URI template {template!r}: {what} at position {pos}")

    parts: list[_Part] = []
    i, n = 0, len(template)
    while i < n:
        c = template[i]
        if c == "{":
            end = template.find("}", i + 1)
            if end < 0 or template.find("{", i + 1, end) >= 0:
                raise fail("unclosed '{'", i)
            parts.append(_parse_expr(template[i + 1 : end], i + 1, fail))
            i = end + 1
        elif c == "}":
            raise fail("unmatched '}'", i)
        else:
            j = i
            while j < n and template[j] not in "{}":
                j += 1
            parts.append(_encode_reserved(template[i:j]))
            i = j
    return parts


def _parse_expr(body: str, pos: int, fail: Callable[[str, int], ValueError]) -> _Expr:
    if not body:
        raise fail("empty expression", pos - 1)
    op = body[0]
    if op in _FUTURE_OPS:
        raise fail(f"reserved operator {op!r}", pos)
    if op not in _OPS:
        if not _VARNAME_START.match(op):
            raise fail(f"unknown operator {op!r}", pos)
        op = ""
    pos += len(op)
    specs = []
    for spec in body[len(op) :].split(","):
        m = _VARSPEC.fullmatch(spec)
        if m is None:
            name = _VARSPEC.match(spec)
            if name is not None and spec[name.end(1) : name.end(1) + 1] == ":":
                modifier = spec[name.end(1) :]
                what = f"bad prefix modifier {modifier!r} (must be :1 to :9999)"
                raise fail(what, pos + name.end(1))
            raise fail(f"bad variable name {spec!r}", pos)
        specs.append((m[1], int(m[2] or 0), m[3] is not None))
        pos += len(spec) + 1
    return _Expr(op, tuple(specs))


# -- expansion ---------------------------------------------------------------


def _encode_unreserved(s: str) -> str:
    return quote(s, safe="")


def _encode_reserved(s: str) -> str:
    out = quote(s, safe=_RESERVED_SAFE)
    return _LONE_PCT.sub("%25", out) if "%" in out else out


def _scalar(value: object, name: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return str(value)
    raise TypeError(f"URI template variable {name!r}: unsupported value {value!r}")


def _expand_expr(expr: _Expr, values: Mapping[str, Value]) -> str:
    first, sep, named, ifemp, allow = _OPS[expr.op]
    enc = _encode_reserved if allow else _encode_unreserved
    out: list[str] = []
    for name, prefix, explode in expr.specs:
        value = values.get(name)
        if value is None:
            continue
        if isinstance(value, str | int | float):
            s = _scalar(value, name)
            if prefix and len(s) > prefix:
                if allow and "%" in s:  # a %XX triplet counts as one character
                    s = "".join(m[0] for _, m in zip(range(prefix), _PCT_OR_CHAR.finditer(s), strict=False))
                else:
                    s = s[:prefix]
            out.append((f"{name}={enc(s)}" if s else name + ifemp) if named else enc(s))
            continue
        if isinstance(value, Mapping):
            pairs = [(_scalar(k, name), _scalar(v, name)) for k, v in value.items() if v is not None]
            if not pairs:
                continue
            _no_prefix(name, prefix)
            if explode:
                kv = ((enc(k), "=" + enc(v) if v or not named else ifemp) for k, v in pairs)
                out.append(sep.join(k + v for k, v in kv))
                continue
            body = ",".join(f"{enc(k)},{enc(v)}" for k, v in pairs)
        elif isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
            items = [_scalar(v, name) for v in value if v is not None]
            if not items:
                continue
            _no_prefix(name, prefix)
            if explode:
                if named:
                    out.append(sep.join(f"{name}={enc(v)}" if v else name + ifemp for v in items))
                else:
                    out.append(sep.join(map(enc, items)))
                continue
            body = ",".join(map(enc, items))
        else:
            raise TypeError(f"URI template variable {name!r}: unsupported value {value!r}")
        out.append((f"{name}={body}" if body else name + ifemp) if named else body)
    return first + sep.join(out) if out else ""


def _no_prefix(name: str, prefix: int) -> None:
    if prefix:
        raise ValueError(f"URI template variable {name!r}: prefix modifier on a list or mapping")


# -- matching ----------------------------------------------------------------

_HEX: Final = "[0-9A-Fa-f]"
_NAMECHAR: Final = "[A-Za-z0-9_.%]"
# Characters a non-reserved value never contains, by operator.
_EXCLUDED: Final = {
    "": "/?#&,",
    ".": "/?#&.",
    "/": "/?#&",
    ";": "/?#&;=",
    "?": "#&=",
    "&": "#&=",
    "+": "",
    "#": "",
}
_STR, _LIST, _NAMED, _PAIR = 0, 1, 2, 3


def _class(excluded: str) -> str:
    return "[^" + "".join(re.escape(c) for c in excluded) + "]" if excluded else "."


def _run(excluded: str, stop: str | None, lo: int, hi: int, reverse: bool) -> str:
    """A run of value characters, possessive (never backtracked into)."""
    if hi:  # count characters: a %-encoded UTF-8 sequence is one
        other = _class(excluded + "%")
        if reverse:
            unit = f"(?:(?:{_HEX}[89ABab]%)*+{_HEX}{{2}}%|{other})"
        else:
            unit = f"(?:%{_HEX}{{2}}(?:%[89ABab]{_HEX})*+|{other})"
    else:
        unit = _class(excluded)
    if stop and stop[0] not in excluded:
        unit = f"(?:(?!{re.escape(stop)}){unit})"
    if hi:
        return f"{unit}{{{lo},{hi}}}+"
    return unit + ("++" if lo else "*+")


class _Regex:
    """One compiled piece of a template and what its groups mean."""

    __slots__ = ("pattern", "caps", "reverse")

    def __init__(self, parts: list[tuple[_Part, str | None, str]], reverse: bool) -> None:
        self.reverse = reverse
        self.caps: list[tuple[str, str, int, str]] = []  # group, name, kind, separator
        pieces = []
        for part, stop, extra in reversed(parts) if reverse else parts:
            if isinstance(part, str):
                pieces.append(re.escape(part[::-1] if reverse else part))
            else:
                pieces.append(self._expr(part, stop, extra))
        self.pattern = re.compile("".join(pieces), re.S)

    def _group(self, pattern: str, name: str, kind: int, sep: str = "") -> str:
        group = f"g{len(self.caps)}"
        self.caps.append((group, name, kind, sep))
        return f"(?P<{group}>{pattern})"

    def _expr(self, expr: _Expr, stop: str | None, extra: str) -> str:
        first, sep, named, _, _ = _OPS[expr.op]
        rev = self.reverse
        if named:
            lead = "[?&]" if expr.op == "?" else re.escape(first)
            out = []
            for name, prefix, explode in reversed(expr.specs) if rev else expr.specs:
                value = _run(_EXCLUDED[expr.op], None if rev else stop, 0, prefix, rev)
                ename = re.escape(name[::-1] if rev else name)
                if rev:
                    pair = f"(?:{value}=)?{ename}"
                    item = f"(?:{{}}{lead})"
                else:
                    pair = f"{ename}(?!{_NAMECHAR})(?:={value})?"
                    item = f"(?:{lead}{{}})"
                if explode:
                    out.append(self._group(item.format(pair) + "++", name, _NAMED, sep) + "?")
                else:
                    out.append(item.format(self._group(pair, name, _PAIR)) + "?")
            return "".join(out)
        specs = expr.specs
        last = len(specs) - 1
        esep = re.escape(sep)

        def var(i: int) -> str:
            # Backwards, the first variable is followed by the operator's
            # first character and the others by the separator; forwards, the
            # separator is excluded from all but the last variable.
            name, prefix, explode = specs[i]
            comma = expr.op in _RESERVED_OPS and (i > 0 if rev else i < last)
            excluded = _EXCLUDED[expr.op] + extra + ("," if comma else "")
            lo = 1 if i == 0 and not first else 0
            bound = (first or stop) if rev and i == 0 else None if rev else stop
            run = _run(excluded, bound, lo, prefix, rev)
            if explode:
                more = _run(excluded, bound, 0, 0, rev)
                ahead = f"(?={esep})" if rev and i == 0 and first == sep else ""
                return self._group(f"{run}(?:{esep}{more}{ahead})*+", name, _LIST, sep)
            return self._group(run, name, _STR)

        efirst = re.escape(first)
        if rev:
            inner = ""
            for i in range(last, 0, -1):
                inner = f"(?:{inner}{var(i)}{esep})?"
            body = f"{inner}{var(0)}{efirst}"
        else:
            tail_ = ""
            groups = [var(i) for i in range(len(specs))]
            for g in reversed(groups[1:]):
                tail_ = f"(?:{esep}{g}{tail_})?"
            body = f"{efirst}{groups[0]}{tail_}"
        return f"(?:{body})?" if first else body

    def collect(self, m: re.Match[str], found: MatchResult) -> bool:
        for group, name, kind, sep in self.caps:
            text = m.group(group)
            if text is None:
                continue
            if self.reverse:
                text = text[::-1]
            value: str | list[str]
            if kind == _STR:
                value = unquote(text)
            elif kind == _LIST:
                value = [unquote(t) for t in text.split(sep)]
            elif kind == _PAIR:
                value = unquote(text.partition("=")[2])
            else:
                value = [unquote(t.partition("=")[2]) for t in text[1:].split(sep)]
            if found.setdefault(name, value) != value:
                return False
        return True


_Annotated: TypeAlias = "tuple[_Part, tuple[str | None, str | None] | None, str]"


def _is_op(part: _Part, ops: frozenset[str]) -> bool:
    return isinstance(part, _Expr) and part.op in ops


class _Matcher:
    __slots__ = ("split_query", "whole", "forward", "pivot", "backward", "query", "tail")

    def __init__(self, parts: list[_Part]) -> None:
        tail_start = len(parts)
        while tail_start and _is_op(parts[tail_start - 1], _QUERY_OPS):
            tail_start -= 1
        self.tail = [spec for p in parts[tail_start:] if isinstance(p, _Expr) for spec in p.specs]
        main = parts[:tail_start]
        # Split the template into its path and its query at the first '?'.
        path: list[_Part] = main
        query: list[_Part] = []
        for i, p in enumerate(main):
            if isinstance(p, str) and "?" in p:
                k = p.index("?")
                path = [*main[:i], p[:k]] if k else main[:i]
                query = [p[k:], *main[i + 1 :]]
                break
            if _is_op(p, _QUERY_OPS):
                path, query = main[:i], main[i:]
                break
        self.split_query = bool(query or self.tail)
        # What follows each part: the characters that bound reserved values.
        later: list[set[str]] = []
        seen: set[str] = {"&", "?"} if self.tail else set()
        for p in reversed(path + query):
            later.append(set(seen))
            if isinstance(p, str):
                seen |= set(p) & {"#", "&", "?"}
            elif p.op in _QUERY_OPS:
                seen |= {"&", "?"}
            elif p.op == "#":
                seen.add("#")
        later.reverse()

        def annotate(zone: list[_Part], offset: int, bounds: set[str]) -> list[_Annotated]:
            out: list[_Annotated] = []
            for i, p in enumerate(zone):
                if isinstance(p, str):
                    out.append((p, None, ""))
                    continue
                nxt = zone[i + 1] if i + 1 < len(zone) else None
                prev = zone[i - 1] if i else None
                if isinstance(nxt, str) or nxt is None:
                    stop_fwd = nxt
                else:
                    stop_fwd = nxt.op if nxt.op in _PREFIXED_OPS else None
                stop_rev = prev[::-1] if isinstance(prev, str) else None
                extra = ""
                if p.op in _RESERVED_OPS:
                    extra = "".join(sorted(later[offset + i] & bounds))
                out.append((p, (stop_fwd, stop_rev), extra))
            return out

        ann = annotate(path, 0, {"#"})
        pivot = next((i for i, (p, _, _) in enumerate(ann) if _is_op(p, _RESERVED_OPS)), None)

        def build(items: list[_Annotated], reverse: bool) -> _Regex | None:
            if not items:
                return None
            idx = 1 if reverse else 0
            return _Regex([(p, s[idx] if s else None, e) for p, s, e in items], reverse)

        self.whole: _Regex | None = None  # the path, when it has no pivot
        self.forward: _Regex | None = None  # what comes before the pivot
        self.pivot: _Regex | None = None
        self.backward: _Regex | None = None  # what comes after it, reversed
        if pivot is None:
            self.whole = build(ann, False) or _Regex([], False)
        else:
            p, _, extra = ann[pivot]
            self.forward = build(ann[:pivot], False)
            self.pivot = _Regex([(p, None, extra)], False)
            self.backward = build(ann[pivot + 1 :], True)
        self.query = build(annotate(query, len(path), {"#", "&"}), False)

    def __call__(self, uri: str) -> MatchResult | None:
        found: MatchResult = {}
        qs = ""
        if self.split_query:
            q = uri.find("?")
            if q >= 0:
                uri, qs = uri[:q], uri[q:]
        if self.whole is not None:
            m = self.whole.pattern.fullmatch(uri)
            if m is None or not self.whole.collect(m, found):
                return None
        elif self.pivot is not None:
            start, end = 0, len(uri)
            if self.forward is not None:
                m = self.forward.pattern.match(uri)
                if m is None or not self.forward.collect(m, found):
                    return None
                start = m.end()
            if self.backward is not None:
                m = self.backward.pattern.match(uri[start:][::-1])
                if m is None or not self.backward.collect(m, found):
                    return None
                end -= m.end()
            m = self.pivot.pattern.fullmatch(uri, start, end) if start <= end else None
            if m is None or not self.pivot.collect(m, found):
                return None
        if not self.split_query:
            return found
        pos = 0
        if self.query is not None:
            m = (self.query.pattern.match if self.tail else self.query.pattern.fullmatch)(qs)
            if m is None or not self.query.collect(m, found):
                return None
            pos = m.end()
        if not self.tail:
            return found
        rest = qs[pos:]
        if rest:
            if rest[0] == ("&" if pos else "?"):
                rest = rest[1:]
            elif not pos or qs[pos - 1] not in "?&":
                return None
            if "#" in rest:
                return None
        pairs: dict[str, list[str]] = {}
        for item in rest.split("&"):
            if item:
                key, _, value = item.partition("=")
                pairs.setdefault(unquote(key) if "%" in key else key, []).append(value)
        for name, prefix, explode in self.tail:
            values = pairs.get(name)
            if values is None:
                continue
            got: str | list[str]
            if explode:
                got = [unquote(v) for v in values]
            else:
                got = unquote(values[0])
                if prefix and len(got) > prefix:
                    return None
            if found.setdefault(name, got) != got:
                return None
        return found


# -- public ------------------------------------------------------------------


class UriTemplate:
    """A parsed RFC 6570 URI template; see the module documentation."""

    __slots__ = ("template", "variables", "_parts", "_matcher")

    template: str
    variables: tuple[str, ...]

    def __init__(self, template: str) -> None:
        if not isinstance(template, str):
            raise TypeError(f"URI template must be a str, not {type(template).__name__}")
        self.template = template
        self._parts = _parse(template)
        names = [name for p in self._parts if isinstance(p, _Expr) for name, _, _ in p.specs]
        self.variables = tuple(dict.fromkeys(names))
        self._matcher: _Matcher | None = None

    def expand(self, values: Mapping[str, Value]) -> str:
        """The URI for ``values``; variables missing from it are undefined."""
        return "".join(p if isinstance(p, str) else _expand_expr(p, values) for p in self._parts)

    def match(self, uri: str) -> MatchResult | None:
        """The variables of ``uri`` if it matches this template, else ``None``."""
        matcher = self._matcher
        if matcher is None:
            matcher = self._matcher = _Matcher(self._parts)
        found = matcher(uri)
        if found is None or len(found) < 2:
            return found
        return {name: found[name] for name in self.variables if name in found}

    def __eq__(self, other: object) -> bool:
        if isinstance(other, UriTemplate):
            return self.template == other.template
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.template)

    def __repr__(self) -> str:
        return f"UriTemplate({self.template!r})"

    def __str__(self) -> str:
        return self.template
