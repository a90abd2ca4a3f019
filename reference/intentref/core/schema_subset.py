"""The supported Draft-7 subset, field selection, and validation of business data (seed 003).

A definition is checked once, at construction: every node is walked iteratively, each
keyword handed to the one small checker registered for it in ``KEYWORD_CHECKS``.  The
first fault found is raised with the JSON Pointer of the node that holds it.

Validation of ``data`` uses python-jsonschema's Draft7Validator, extended only where the
seeds demand it: ``pattern`` and the ``regex`` format follow ECMA-262 (through ``regress``,
Rust's ECMAScript engine) instead of Python's ``re``, and the format list is the seeds'.
We chose jsonschema over faster validators because it is the reference Draft-7
implementation and lets us replace exactly these two rules.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

import regress

from intentref.core import jsonpointer, limits
from intentref.core.errors import Issue, error
from intentref.core.limits import MAX_COMBINATION_ITEMS, MAX_SAFE_INTEGER, MIN_COMBINATION_ITEMS
from intentref.core.text import has_text

# The reference's resource limits (D-LIM-004), named here too for callers that read them beside
# the subset.  The checks read the limits of the definition's policy instead (``SchemaPolicy``),
# so that a decision variant can change them.
MAX_ENUM_VALUES: Final = limits.MAX_ENUM_VALUES
MAX_PATTERN_LENGTH: Final = limits.MAX_PATTERN_LENGTH
MAX_SCHEMA_BYTES: Final = limits.MAX_SCHEMA_BYTES
MAX_SCHEMA_DEPTH: Final = limits.MAX_SCHEMA_DEPTH
MAX_SCHEMA_JSON_DEPTH: Final = limits.MAX_SCHEMA_JSON_DEPTH
MAX_SCHEMA_NODES: Final = limits.MAX_SCHEMA_NODES
MAX_TOP_LEVEL_FIELDS: Final = limits.MAX_TOP_LEVEL_FIELDS

JSON_TYPES: Final = ("object", "array", "string", "number", "integer", "boolean", "null")
# spec: R-SCH-026 -- the supported format names.
SUPPORTED_FORMATS: Final = (
    "date", "time", "date-time", "duration", "uri", "uri-reference", "url", "email", "hostname",
    "ipv4", "ipv6", "regex", "uuid", "json-pointer", "relative-json-pointer",
)  # fmt: skip
# spec: R-SCH-023 -- $schema accepts only Draft-7 identifiers over http or https.
DRAFT7_IDS: Final = frozenset(
    f"{scheme}://json-schema.org/draft-07/schema{suffix}" for scheme in ("http", "https") for suffix in ("", "#")
)
# spec: R-SCH-024, R-SCH-025 -- accepted, then removed before the definition is used.
REMOVED_KEYWORDS: Final = frozenset({"$id", "_label", "_customMessages"})
# spec: R-SCH-027 -- the root may not constrain values as a whole.
ROOT_FORBIDDEN: Final = frozenset({"anyOf", "oneOf", "allOf", "not", "enum", "const"})


class _Fault(Exception):
    def __init__(self, code: str, path: str, message: str) -> None:
        super().__init__(message)
        self.code, self.path, self.message = code, path, message


def unsupported(path: str, message: str) -> _Fault:
    return _Fault("SCHEMA_UNSUPPORTED", path, message)


def too_large(path: str, message: str) -> _Fault:
    return _Fault("LIMIT_EXCEEDED", path, message)


# --- one checker per keyword -------------------------------------------------------------
# Each takes (value, path of the keyword, the definition's policy) and yields the (pointer, subschema) pairs that are
# schemas themselves, so that the walker can descend into them.
SubSchemas = Iterator[tuple[str, Any]]


class SchemaPolicy(Protocol):
    """What the subset's checks and a ``Definition`` ask of the policy they are given.

    ``intentref.core.policy.Policy`` answers with the reference's limits (D-LIM-004), its
    keyword table (``KEYWORD_CHECKS``), ECMA-262 patterns and asserted formats (D-SCH-001,
    D-SCH-003); a decision variant answers another way.
    """

    @property
    def max_schema_bytes(self) -> int: ...
    @property
    def max_schema_depth(self) -> int: ...
    @property
    def max_schema_nodes(self) -> int: ...
    @property
    def max_top_level_fields(self) -> int: ...
    @property
    def max_pattern_length(self) -> int: ...
    @property
    def max_enum_values(self) -> int: ...
    @property
    def max_candidate_depth(self) -> int: ...

    def keyword_checks(self) -> Mapping[str, KeywordCheck]: ...

    def regex_compiles(self, pattern: str) -> bool: ...

    def data_validator(self, schema: Any) -> Any: ...


KeywordCheck = Callable[[Any, str, SchemaPolicy], SubSchemas]


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _value_check(accepts: Callable[[Any], bool], message: str) -> KeywordCheck:
    """The check of a keyword whose value holds no schema: ``message`` unless ``accepts(value)``."""

    def check(value: Any, path: str, policy: SchemaPolicy) -> SubSchemas:
        if not accepts(value):
            raise unsupported(path, message)
        yield from ()

    return check


# The predicates with a bound or a comparison are functions, not lambdas, so mutation testing reaches them.
def _is_non_negative_integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _is_positive_number(value: Any) -> bool:
    return _is_number(value) and value > 0


def _are_unique_strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value) and len(set(value)) == len(value)


def _is_draft7_id(value: Any) -> bool:
    return isinstance(value, str) and value in DRAFT7_IDS  # a list or dict is not hashable


_non_negative_integer = _value_check(_is_non_negative_integer, "must be a non-negative integer.")
_number = _value_check(_is_number, "must be a number.")
_multiple_of = _value_check(_is_positive_number, "multipleOf must be a number greater than 0.")
_required = _value_check(_are_unique_strings, "required must be an array of unique strings.")
_unique_items = _value_check(lambda v: isinstance(v, bool), "uniqueItems must be a boolean.")
_text = _value_check(lambda v: isinstance(v, str), "must be a string.")
_examples = _value_check(lambda v: isinstance(v, list), "examples must be an array.")
# D-SCH-004: http or https, with or without the trailing "#", at any node.
_dialect = _value_check(_is_draft7_id, "$schema accepts only the Draft-7 identifier (http or https).")


def _type(value: Any, path: str, policy: SchemaPolicy) -> SubSchemas:
    names = value if isinstance(value, list) else [value]
    if not names or any(n not in JSON_TYPES for n in names) or len(set(names)) != len(names):
        raise unsupported(path, "type must be a JSON type name or a non-empty array of unique names.")
    yield from ()


def _properties(value: Any, path: str, policy: SchemaPolicy) -> SubSchemas:
    if not isinstance(value, dict):
        raise unsupported(path, "properties must be an object of schemas.")
    for key, sub in value.items():
        yield f"{path}/{jsonpointer.escape_token(key)}", sub


def _one_schema(value: Any, path: str, policy: SchemaPolicy) -> SubSchemas:
    yield path, value


def _items(value: Any, path: str, policy: SchemaPolicy) -> SubSchemas:
    if isinstance(value, list):
        raise unsupported(path, "tuple (array-form) items are not supported.")
    yield path, value


def _pattern(value: Any, path: str, policy: SchemaPolicy) -> SubSchemas:
    if not isinstance(value, str):
        raise unsupported(path, "pattern must be a string.")
    if len(value) > policy.max_pattern_length:
        raise too_large(path, f"pattern longer than {policy.max_pattern_length} characters.")
    if not policy.regex_compiles(value):
        raise unsupported(path, "pattern is not an ECMA-262 regular expression.")
    yield from ()


def _format(value: Any, path: str, policy: SchemaPolicy) -> SubSchemas:
    if value not in SUPPORTED_FORMATS:
        raise unsupported(path, f"format {value!r} is not supported.")
    yield from ()


def _enum(value: Any, path: str, policy: SchemaPolicy) -> SubSchemas:
    if not isinstance(value, list) or not value:
        raise unsupported(path, "enum must be a non-empty array.")
    max_values = policy.max_enum_values
    if len(value) > max_values:
        raise too_large(path, f"enum holds more than {max_values} values.")
    yield from ()


def _any_value(value: Any, path: str, policy: SchemaPolicy) -> SubSchemas:
    yield from ()


def _combination(value: Any, path: str, policy: SchemaPolicy) -> SubSchemas:
    if not isinstance(value, list) or not MIN_COMBINATION_ITEMS <= len(value) <= MAX_COMBINATION_ITEMS:
        raise unsupported(
            path, f"must be an array of {MIN_COMBINATION_ITEMS} to {MAX_COMBINATION_ITEMS} schemas."
        )
    for index, sub in enumerate(value):
        yield f"{path}/{index}", sub


# spec: R-SCH-013 .. R-SCH-021 -- the keyword table, one checker each.  Anything missing is unsupported.
KEYWORD_CHECKS: Final[dict[str, KeywordCheck]] = {
    "type": _type,
    "properties": _properties,
    "required": _required,
    "additionalProperties": _one_schema,
    "items": _items,
    "minItems": _non_negative_integer,
    "maxItems": _non_negative_integer,
    "uniqueItems": _unique_items,
    "minLength": _non_negative_integer,
    "maxLength": _non_negative_integer,
    "pattern": _pattern,
    "format": _format,
    "minimum": _number,
    "maximum": _number,
    "exclusiveMinimum": _number,
    "exclusiveMaximum": _number,
    "multipleOf": _multiple_of,
    "enum": _enum,
    "const": _any_value,
    "anyOf": _combination,
    "oneOf": _combination,
    "allOf": _combination,
    "not": _one_schema,
    "title": _text,
    "description": _text,
    "examples": _examples,
    "default": _any_value,
    "$comment": _text,
    "$schema": _dialect,
    "$id": _text,
    "_label": _any_value,
    "_customMessages": _any_value,
}


def ecma_regex_compiles(pattern: str) -> bool:
    try:
        regress.Regex(pattern, "u")
    except regress.RegressError:
        return False
    return True


# --- plain JSON data ------------------------------------------------------------------------


def _check_plain_json(root: Any, max_json_depth: int) -> None:
    """spec: R-SCH-032 -- a definition is copyable JSON: no cycles, no foreign objects."""
    on_path: set[int] = set()
    stack: list[tuple[Any, str, bool, int]] = [(root, "", False, 0)]
    while stack:
        node, path, leaving, depth = stack.pop()
        if leaving:
            on_path.discard(id(node))
            continue
        if isinstance(node, dict | list):
            if id(node) in on_path:
                raise unsupported(path, "the definition contains a cycle.")
            if depth > max_json_depth:
                # Before anything recursive (json.dumps, the validator) meets it.
                raise too_large(path, f"the definition nests deeper than {max_json_depth} JSON levels.")
            on_path.add(id(node))
            stack.append((node, path, True, depth))
            if isinstance(node, dict):
                for key, value in node.items():
                    if not isinstance(key, str):
                        raise unsupported(path, "object keys must be strings.")
                    stack.append((value, f"{path}/{jsonpointer.escape_token(key)}", False, depth + 1))
            else:
                stack.extend((value, f"{path}/{i}", False, depth + 1) for i, value in enumerate(node))
        elif isinstance(node, float):
            if not math.isfinite(node):
                raise unsupported(path, "numbers must be finite.")
        elif isinstance(node, int) and not isinstance(node, bool) and abs(node) > MAX_SAFE_INTEGER:
            # D-SCH-010: a JavaScript runtime could not even read this definition.
            raise unsupported(path, "integers must lie within the safe integer range.")
        elif not (node is None or isinstance(node, str | int | bool)):
            raise unsupported(path, f"{type(node).__name__} is not JSON data.")


# --- the walk ---------------------------------------------------------------------------------


@dataclass
class _WalkState:
    policy: SchemaPolicy
    keyword_checks: Mapping[str, KeywordCheck]
    nodes: int = 0


def _check_node(node: Any, path: str, depth: int, state: _WalkState, pending: list[tuple[Any, str, int]]) -> None:
    state.nodes += 1
    max_nodes, max_depth = state.policy.max_schema_nodes, state.policy.max_schema_depth
    if state.nodes > max_nodes:
        raise too_large(path, f"the definition has more than {max_nodes} schema nodes.")
    if depth > max_depth:
        raise too_large(path, f"the definition nests deeper than {max_depth} levels.")
    if isinstance(node, bool):
        return  # spec: R-SCH-033 -- boolean schemas are fine below the root
    if not isinstance(node, dict):
        raise unsupported(path, "a schema must be an object or a boolean.")
    for keyword, value in node.items():
        check = state.keyword_checks.get(keyword)
        kpath = f"{path}/{jsonpointer.escape_token(keyword)}"
        if check is None:
            # spec: R-SCH-028, R-SCH-029, R-SCH-030, R-SCH-031 -- $ref (even local), definitions, $defs, conditionals, the rest.
            raise unsupported(kpath, f"keyword {keyword!r} is not supported.")
        for sub_path, sub in check(value, kpath, state.policy):
            pending.append((sub, sub_path, depth + 1))


def check_definition(schema: Any, policy: SchemaPolicy) -> None:
    """Raise SCHEMA_UNSUPPORTED / LIMIT_EXCEEDED (stage config) for a definition outside the subset."""
    try:
        _check_definition(schema, policy)
    except _Fault as fault:
        raise error(fault.code, "config", f"schema {fault.path or '/'}: {fault.message}",
                    [Issue(fault.code, "config", fault.path, fault.message)]) from None  # fmt: skip


def _check_definition(schema: Any, policy: SchemaPolicy) -> None:
    if not isinstance(schema, dict):
        raise unsupported("", "the root of a definition must be an object schema.")
    if not schema:
        return  # spec: R-SCH-012 -- {} means no extension fields
    # D-LIM-004: the resource limits are the policy's.
    # JSON nesting of the whole definition, keyword values included (see limits.MAX_SCHEMA_JSON_DEPTH).
    _check_plain_json(schema, limits.schema_json_depth(policy.max_schema_depth, policy.max_candidate_depth))
    if len(json.dumps(schema, ensure_ascii=False).encode("utf-8")) > policy.max_schema_bytes:
        raise too_large("", f"the definition is larger than {policy.max_schema_bytes} bytes.")
    # spec: R-SCH-011 -- a non-empty root is type "object" with properties.
    if schema.get("type") != "object":
        raise unsupported("/type", 'the root must have type "object".')
    if not isinstance(schema.get("properties"), dict):
        raise unsupported("/properties", "the root must have properties.")
    for keyword in schema:
        if keyword in ROOT_FORBIDDEN:
            raise unsupported("/" + keyword, f"{keyword} is not supported at the root; put it inside a property.")
    if len(schema["properties"]) > policy.max_top_level_fields:
        raise too_large("/properties", f"more than {policy.max_top_level_fields} top-level fields.")
    state = _WalkState(policy, policy.keyword_checks())
    pending: list[tuple[Any, str, int]] = [(schema, "", 0)]
    while pending:
        node, path, depth = pending.pop()
        _check_node(node, path, depth, state, pending)


def strip_removed_keywords(schema: Any) -> Any:
    """A copy of ``schema`` without $id, _label and _customMessages at schema positions."""

    def strip(node: Any) -> Any:
        if not isinstance(node, dict):
            return node
        out: dict[str, Any] = {}
        for keyword, value in node.items():
            if keyword in REMOVED_KEYWORDS:
                continue
            if keyword in ("properties",):
                out[keyword] = {k: strip(v) for k, v in value.items()}
            elif keyword in ("items", "additionalProperties", "not"):
                out[keyword] = strip(value)
            elif keyword in ("anyOf", "oneOf", "allOf"):
                out[keyword] = [strip(v) for v in value]
            else:
                out[keyword] = json.loads(json.dumps(value))  # a detached copy of plain data
        return out

    return strip(schema)


# --- selection and validation --------------------------------------------------------------

def _regex_format(instance: object) -> bool:
    return not isinstance(instance, str) or ecma_regex_compiles(instance)


def _ecma_pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    if isinstance(instance, str) and _compiled(pattern).find(instance) is None:
        from jsonschema import ValidationError  # loaded already: this runs inside a validator

        yield ValidationError(f"{instance!r} does not match {pattern!r}")


_REGEX_CACHE: dict[str, Any] = {}


def _compiled(pattern: str) -> Any:
    compiled = _REGEX_CACHE.get(pattern)
    if compiled is None:
        compiled = _REGEX_CACHE[pattern] = regress.Regex(pattern, "u")
    return compiled


@functools.cache
def validation_kit() -> tuple[Any, Any, Any]:
    """(Draft-7's validator class, that class with the ECMA pattern rule, the format checker).

    Built on first use, not at import: python-jsonschema imports its optional format
    libraries when it loads (about 80 ms), and a program that only checks definitions (a
    server refusing its configuration at start) never validates data.
    """
    from jsonschema import Draft7Validator, Draft201909Validator, FormatChecker, validators

    formats = FormatChecker(formats=())
    for name in SUPPORTED_FORMATS:
        if name in ("url", "regex"):
            continue
        source = Draft7Validator.FORMAT_CHECKER if name in Draft7Validator.FORMAT_CHECKER.checkers else (
            Draft201909Validator.FORMAT_CHECKER
        )
        func, raises = source.checkers[name]
        formats.checks(name, raises=raises)(func)
    uri_func, uri_raises = Draft7Validator.FORMAT_CHECKER.checkers["uri"]
    formats.checks("url", raises=uri_raises)(uri_func)  # D-SCH-002: url is an absolute URI
    formats.checks("regex")(_regex_format)
    ecma = validators.extend(Draft7Validator, {"pattern": _ecma_pattern})
    return Draft7Validator, ecma, formats


def data_validator(schema: Any) -> Any:
    """The validator of ``schema``: Draft 7 with ECMA-262 patterns (D-SCH-001), formats asserted (D-SCH-003)."""
    _draft7, ecma, formats = validation_kit()
    return ecma(schema, format_checker=formats)


def _validation_schema(node: Any) -> Any:
    """``node`` with boolean property and items schemas written as objects.

    jsonschema reports an error from a boolean subschema without its instance path (a
    ``false`` property would be blamed on its parent object), so for validation only,
    ``true`` becomes ``{}`` and ``false`` becomes ``{"not": {}}``: the same meaning.
    """
    if isinstance(node, bool):
        return {} if node else {"not": {}}
    if not isinstance(node, dict):
        return node
    out = dict(node)
    if isinstance(out.get("properties"), dict):
        out["properties"] = {k: _validation_schema(v) for k, v in out["properties"].items()}
    # Only where a subschema's errors surface with their own paths.  Under not, anyOf and
    # oneOf they do not (one error at the parent, whose message may quote the subschemas as
    # the definition wrote them), so those are left alone.
    for keyword in ("items", "additionalProperties"):
        if isinstance(out.get(keyword), dict):
            out[keyword] = _validation_schema(out[keyword])
    if isinstance(out.get("items"), bool):
        out["items"] = _validation_schema(out["items"])
    if isinstance(out.get("allOf"), list):
        # A boolean entry keeps its path already (it is the parent's); only objects are rewritten.
        out["allOf"] = [_validation_schema(v) if isinstance(v, dict) else v for v in out["allOf"]]
    return out


@dataclass(frozen=True)
class DataError:
    path: str  # JSON Pointer under /data
    message: str
    keyword: str = ""  # the schema keyword that failed (type, minimum, ...)


@dataclass
class Definition:
    """A checked definition: what the data stage needs to build tasks and validate data."""

    schema: dict[str, Any]
    fields: tuple[str, ...]
    # The policy the definition was checked under: its validators follow it too.
    policy: SchemaPolicy = field(repr=False)
    _validators: dict[tuple[str, ...], Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_schema(cls, schema: Any, policy: SchemaPolicy) -> Definition:
        if schema is None:
            schema = {}
        check_definition(schema, policy)
        clean = strip_removed_keywords(schema)
        return cls(clean, tuple(clean.get("properties", {})), policy=policy)

    @property
    def root_description(self) -> str | None:
        value = self.schema.get("description")
        return value if has_text(value) else None

    def field_schema(self, name: str) -> Any:
        return self.schema["properties"][name]

    def selected_schema(self, selected: tuple[str, ...]) -> dict[str, Any]:
        """spec: R-FLD-007, R-FLD-008, R-FLD-009 -- only the selected properties, required filtered."""
        out: dict[str, Any] = {"type": "object"}
        for annotation in ("title", "description"):
            if annotation in self.schema:
                out[annotation] = self.schema[annotation]
        out["properties"] = {name: self.schema["properties"][name] for name in selected}
        required = [name for name in self.schema.get("required", []) if name in selected]
        out["required"] = required
        out["additionalProperties"] = False
        return out

    def is_required(self, name: str) -> bool:
        return name in self.schema.get("required", [])

    def validate(self, selected: tuple[str, ...], data: Any) -> list[DataError]:
        """Validation errors of ``data`` against the selection: never coerces, fills or drops."""
        validator = self._validators.get(selected)
        if validator is None:
            validator = self.policy.data_validator(_validation_schema(self.selected_schema(selected)))
            self._validators[selected] = validator
        out = []
        for err in validator.iter_errors(data):
            out.append(DataError("/data" + jsonpointer.join(err.absolute_path), err.message, str(err.validator)))
        out.sort(key=lambda e: e.path)
        return out
