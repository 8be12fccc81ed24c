"""Schemathesis hooks for scripts/schemathesis: the rules that join
parameters, which OpenAPI cannot state, and nothing else. Every other
request goes to the server as schemathesis generated it.

- `GET /api/v1/decode/{id}` reads `id` in the form `from` names. The
  document gives `id` as `anyOf` its forms, each titled by its `from` value;
  a request whose `id` and `from` are each valid but disagree (an `id` that
  is hex while `from` says decimal) gets `from` set to a form its `id` is in.
- `GET /api/v1/range` refuses a `to` before `from`, and a missing `from` is
  now: a request whose times are each valid but out of order gets them
  swapped, or `from` set to `to` when `from` is missing.
- `GET /api/v1/range` reads its times in `layout`, whose span of times the
  document gives in `x-time-span-ms` (the times' own schema is the default
  layout's, which every spec of `LANGUAGE` below spans): a
  request whose times are each valid but outside its preset's span
  (`from=2010-11-04T01:42:54.657Z&layout=sonyflake`, before Sonyflake's
  epoch) gets the default layout. This one is a third rule, kept because
  OpenAPI cannot state it either: scripts/schemathesis says why.
- A spec `layout` (every operation that takes one): the document's pattern
  admits every spec the server takes, and its description says in words
  what else makes one valid (widths adding up to at most 64, names
  distinct, ...) and that every time and ID must lie in the spec's own
  span and bits. A pattern cannot say that, so the testing tool's limit is
  kept here, not in the contract: a generated spec outside `LANGUAGE`
  (specs valid with every time and ID the document admits: Twitter's epoch
  in Unix ms or ISO-8601, the unit `1ms` left out or written, a 41-bit
  time or 42 with the sign bit, the 22 bits below cut into `sequence`,
  `worker,sequence` or `datacenter,worker,sequence` with those of 1 to 5
  bits) is replaced by one of them, picked by the spec's text.
  (`GET /api/v1/compose` takes a layout's own field names as parameters,
  which OpenAPI cannot state: the document gives Twitter's and no
  `layout`; tests/api/ composes in other layouts.)

Negative cases (schemathesis's own mode) are left as generated, so negative
testing is untouched, and a rule fires only when the values it joins are
each valid. The forms' patterns, the times' bounds, the presets' spans and
the default layout's epoch are read from the document, not copied here
(`LANGUAGE`'s widths, Twitter's 41 and 22, are written below).
"""

import datetime
import re
import time
import zlib

import schemathesis

DECODE = "/api/v1/decode/{id}"
RANGE = "/api/v1/range"

# `from` value -> compiled pattern of `id` in that form, from the document.
FORMS = {}
# The pattern of the ISO-8601 form of a time input, from the document.
ISO8601 = []
# The [minimum, maximum] of the Unix ms form of a time input, from the document.
UNIX_MS = []
# Preset name -> [first, last] Unix ms it encodes, from the document.
SPANS = {}
# The specs a generated `layout` may be (see the module's docstring), built
# from the default layout's epoch in the document.
LANGUAGE = []


@schemathesis.hook
def after_load_schema(context, schema):
    paths = schema.raw_schema["paths"]
    for parameter in paths[DECODE]["get"]["parameters"]:
        if parameter["name"] == "id":
            for form in parameter["schema"]["anyOf"]:
                FORMS[form["title"]] = re.compile(form["pattern"])
    for parameter in paths[RANGE]["get"]["parameters"]:
        if parameter["name"] == "from":
            for form in parameter["schema"]["oneOf"]:
                if "pattern" in form:
                    ISO8601.append(re.compile(form["pattern"]))
                if form.get("type") == "integer":
                    UNIX_MS.extend([form["minimum"], form["maximum"]])
        if parameter["name"] == "layout":
            SPANS.update(parameter["schema"]["x-time-span-ms"])
    assert FORMS and ISO8601 and UNIX_MS and SPANS, (
        "the document no longer has what these hooks read"
    )
    LANGUAGE.extend(_language(SPANS["twitter"][0]))


def _language(epoch_ms):
    """Specs of Twitter's epoch and 41 time bits, the 22 below cut in
    up to three: each spans exactly the default layout's times and holds
    every 63-bit ID."""
    when = datetime.datetime.fromtimestamp(epoch_ms / 1000, tz=datetime.timezone.utc)
    iso = when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{epoch_ms % 1000:03d}Z"
    below = 22
    cuts = [f"sequence:{below}"]
    cuts += [f"worker:{w},sequence:{below - w}" for w in range(1, below)]
    cuts += [
        f"datacenter:{d},worker:{w},sequence:{below - d - w}"
        for d in range(1, 6)
        for w in range(1, 6)
    ]
    return [
        f"{epoch}{unit};fields={time_field},{cut}"
        for epoch in (f"epoch={epoch_ms}", f"epoch={iso}")
        for unit in ("", ";unit=1ms")
        for time_field in ("timestamp:41", "timestamp:42")
        for cut in cuts
    ]


@schemathesis.hook
def map_case(context, case):
    meta = getattr(case, "meta", None)
    if meta is not None and meta.generation.mode.is_negative:
        return case
    _layout(case)
    if case.path == DECODE:
        _decode(case)
    elif case.path == RANGE:
        _range(case)
    return case


def _layout(case):
    query = case.query
    if not query or not isinstance(query.get("layout"), str):
        return
    layout = query["layout"]
    # Missing or empty is the default; presets are the document's enum.
    if layout == "" or layout in SPANS or layout in LANGUAGE:
        return
    query["layout"] = LANGUAGE[zlib.crc32(layout.encode()) % len(LANGUAGE)]


def _decode(case):
    id_ = (case.path_parameters or {}).get("id")
    query = case.query if case.query is not None else {}
    # Missing or empty is decimal.
    form = query.get("from") or "decimal"
    if not isinstance(id_, str) or not isinstance(form, str):
        return
    if form not in FORMS or FORMS[form].search(id_):
        return
    for name, pattern in FORMS.items():
        if pattern.search(id_):
            query["from"] = name
            case.query = query
            return


def _range(case):
    query = case.query
    if not query:
        return
    now = int(time.time() * 1000)
    start = _ms(query.get("from", ""), now)
    end = _ms(query["to"], now) if "to" in query else start
    if start is None or end is None:
        return
    layout = query.get("layout") or "twitter"
    if isinstance(layout, str) and layout in SPANS:
        first, last = SPANS[layout]
        if not (first <= start <= last and first <= end <= last):
            query["layout"] = "twitter"
    if end >= start:
        return
    if "from" in query:
        query["from"], query["to"] = query["to"], query["from"]
    else:
        query["from"] = query["to"]


def _ms(value, now):
    """Unix ms of a time input the document admits, or None if it is not
    one (missing or empty is now: only `to` is read here without its
    `from`)."""
    if isinstance(value, bool):
        return None
    if value == "" or value == "now":
        return now
    # The coverage phase sends numbers as they go on the wire: text.
    if isinstance(value, str) and re.fullmatch(r"[0-9]+", value):
        value = int(value)
    if isinstance(value, int):
        return value if UNIX_MS[0] <= value <= UNIX_MS[1] else None
    if not isinstance(value, str) or not any(p.search(value) for p in ISO8601):
        return None
    text = value.strip().upper().replace(",", ".")
    # Milliseconds are all the server reads of a fraction.
    text = re.sub(r"(\.\d{1,3})\d*", r"\1", text)
    parsed = datetime.datetime.fromisoformat(text)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=datetime.timezone.utc)
    return int(parsed.timestamp() * 1000)
