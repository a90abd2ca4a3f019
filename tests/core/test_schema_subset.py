"""The supported Draft-7 subset of seed 003 "支持的 Schema 范围", keyword by keyword."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from intentref import Intent, IntentParseError
from intentref.core import jsonpointer
from intentref.core.limits import (
    MAX_COMBINATION_ITEMS,
    MAX_ENUM_VALUES,
    MAX_PATTERN_LENGTH,
    MAX_SCHEMA_BYTES,
    MAX_SCHEMA_DEPTH,
    MAX_SCHEMA_NODES,
    MAX_TOP_LEVEL_FIELDS,
)
from intentref.core.schema_subset import (
    DRAFT7_IDS,
    JSON_TYPES,
    KEYWORD_CHECKS,
    ROOT_FORBIDDEN,
    SUPPORTED_FORMATS,
)
from tests.conftest import ORDER_CORE, dumps, scripted


def _field(schema):
    """A definition whose one top-level field ``f`` has ``schema``."""
    return {"type": "object", "properties": {"f": schema}}


def _rejected(schema):
    with pytest.raises(IntentParseError) as caught:
        Intent({"schema": schema})
    err = caught.value.to_json()
    assert err["stage"] == "config"
    assert "partialResult" not in err
    assert len(err["issues"]) == 1 and err["issues"][0]["code"] == err["code"]
    return err


def _unsupported_at(schema, pointer):
    # spec: R-SCH-009 -- construction fails with SCHEMA_UNSUPPORTED, naming the offending keyword.
    err = _rejected(schema)
    assert err["code"] == "SCHEMA_UNSUPPORTED", err
    assert err["issues"][0]["path"] == pointer, err
    assert err["issues"][0]["category"] == "config"  # D-ERR-001


def _too_large(schema):
    # spec: R-SCH-010
    err = _rejected(schema)
    assert err["code"] == "LIMIT_EXCEEDED", err
    assert err["issues"][0]["category"] == "config"  # D-ERR-001: a LIMIT_EXCEEDED issue's category follows its stage
    return err


def _errors(intent, value):
    """Schema errors of ``{"f": value}`` against the instance's field f (no candidate around it)."""
    return [e.path for e in intent.definition.validate(("f",), {"f": value})]


# --- every keyword of the table: one valid use, valid and invalid data, one invalid value ----------

# keyword -> (schema of field f using it, a value it accepts, a value it rejects or NOTHING)
NOTHING = object()
VALID_USES = {
    "type": ({"type": "string"}, "x", 1),
    "properties": ({"type": "object", "properties": {"a": {"type": "string"}}}, {"a": "x"}, {"a": 1}),
    "required": ({"type": "object", "properties": {"a": {}}, "required": ["a"]}, {"a": 1}, {}),
    "additionalProperties": ({"type": "object", "additionalProperties": {"type": "integer"}}, {"k": 1}, {"k": "1"}),
    "items": ({"type": "array", "items": {"type": "string"}}, ["a"], ["a", 1]),
    "minItems": ({"type": "array", "minItems": 1}, [1], []),
    "maxItems": ({"type": "array", "maxItems": 1}, [1], [1, 2]),
    "uniqueItems": ({"type": "array", "uniqueItems": True}, [1, 2], [1, 1]),
    "minLength": ({"type": "string", "minLength": 2}, "ab", "a"),
    "maxLength": ({"type": "string", "maxLength": 2}, "ab", "abc"),
    "pattern": ({"type": "string", "pattern": "^[a-z]+$"}, "abc", "abc1"),
    "format": ({"type": "string", "format": "date"}, "2024-02-29", "2024-02-30"),
    "minimum": ({"type": "number", "minimum": 1}, 1, 0.5),
    "maximum": ({"type": "number", "maximum": 1}, 1, 1.5),
    "exclusiveMinimum": ({"type": "number", "exclusiveMinimum": 1}, 1.5, 1),
    "exclusiveMaximum": ({"type": "number", "exclusiveMaximum": 1}, 0.5, 1),
    "multipleOf": ({"type": "number", "multipleOf": 0.5}, 1.5, 1.25),
    "enum": ({"enum": ["a", 1, None]}, None, "b"),
    "const": ({"const": {"k": [1]}}, {"k": [1]}, {"k": [1, 2]}),
    "anyOf": ({"anyOf": [{"type": "string"}, {"type": "integer"}]}, 1, 1.5),
    "oneOf": ({"oneOf": [{"type": "integer"}, {"type": "number"}]}, 1.5, 1),
    "allOf": ({"allOf": [{"type": "string"}, {"maxLength": 1}]}, "a", "ab"),
    "not": ({"not": {"type": "null"}}, 0, None),
    "title": ({"type": "string", "title": "订单编号"}, "x", NOTHING),
    "description": ({"type": "string", "description": "订单编号"}, "x", NOTHING),
    "examples": ({"type": "string", "examples": ["000123", 5]}, "x", NOTHING),
    "default": ({"type": "string", "default": 5}, "x", NOTHING),
    "$comment": ({"type": "string", "$comment": "note"}, "x", NOTHING),
    "$schema": ({"$schema": "http://json-schema.org/draft-07/schema#", "type": "string"}, "x", 1),
    "$id": ({"$id": "urn:example:f", "type": "string"}, "x", 1),
    "_label": ({"type": "string", "_label": "编号"}, "x", NOTHING),
    "_customMessages": ({"type": "string", "minLength": 3, "_customMessages": {"minLength": "太短"}}, "xyz", "x"),
}


def test_every_keyword_of_the_table_has_a_valid_use():
    assert set(VALID_USES) == set(KEYWORD_CHECKS)


@pytest.mark.parametrize("keyword", sorted(VALID_USES))
def test_each_keyword_is_accepted_inside_a_property(keyword):
    # spec: R-SCH-013 R-SCH-014 R-SCH-016 R-SCH-018 R-SCH-019 R-SCH-021 R-SCH-023 R-SCH-024 R-SCH-025
    schema, good, bad = VALID_USES[keyword]
    intent = Intent({"schema": _field(schema)})
    assert intent.fields == ("f",)
    assert _errors(intent, good) == []
    if bad is NOTHING:
        # An annotation or DSL metadata never takes part in business validation (R-SCH-022, R-SCH-025).
        for anything in (1, None, [], {"k": "v"}):
            assert _errors(Intent({"schema": _field({k: v for k, v in schema.items() if k != "type"})}), anything) == []
    else:
        errors = _errors(intent, bad)
        assert errors and all(e == "/data/f" or e.startswith("/data/f/") for e in errors), errors


def _fn():
    return None


# keyword -> invalid values.  Keywords whose value may be any JSON get non-JSON values.
INVALID_VALUES = {
    "type": ["int", [], ["string", "string"], [{}], 5],
    "properties": [[], "a", {"a": 5}],
    "required": ["a", [1], ["a", "a"], {"a": True}],
    "additionalProperties": [5, "no", None],
    "items": [5, None, [{"type": "string"}]],
    "minItems": [-1, 1.5, True, "1"],
    "maxItems": [-1, None],
    "uniqueItems": ["yes", 1, None],
    "minLength": [-1, 2.5, False],
    "maxLength": ["2", []],
    "pattern": [5, "(", "a{2,1}", "(?P<n>x)", None],
    "format": ["color", "int32", 5, None],
    "minimum": ["0", True, None],
    "maximum": [[], False],
    "exclusiveMinimum": [True, "1"],  # Draft-4 boolean form is not Draft-7
    "exclusiveMaximum": [False, {}],
    "multipleOf": [0, -1, "2", True],
    "enum": [[], "a", {"a": 1}],
    "const": [{1, 2}, _fn, float("nan")],
    "anyOf": [[], {}, "x", [{}] * (MAX_COMBINATION_ITEMS + 1)],
    "oneOf": [[], [5]],
    "allOf": [None, [{}] * 17],
    "not": [5, "x", [{}]],
    "title": [5, None],
    "description": [[], {}],
    "examples": ["x", {}],
    "default": [float("inf"), {1}],
    "$comment": [1, None],
    "$schema": ["https://json-schema.org/draft/2020-12/schema", "http://json-schema.org/draft-04/schema#", [], {}, 7],
    "$id": [5, None],
    "_label": [_fn, float("nan")],
    "_customMessages": [{1, 2}, (i for i in ())],
}
INVALID = [(k, v) for k, values in INVALID_VALUES.items() for v in values]


def test_every_keyword_of_the_table_has_an_invalid_value():
    assert set(INVALID_VALUES) == set(KEYWORD_CHECKS)


@pytest.mark.parametrize(("keyword", "value"), INVALID, ids=[f"{k}-{i}" for i, (k, _v) in enumerate(INVALID)])
def test_each_keyword_with_an_invalid_value_is_rejected_with_its_pointer(keyword, value):
    # spec: R-SCH-009 R-SCH-015 R-SCH-020 R-SCH-023 R-SCH-026 R-SCH-032
    schema = _field({"type": ["string", "object", "array", "number"], keyword: value})
    pointer = "/properties/f/" + jsonpointer.escape_token(keyword)
    err = _rejected(schema)
    assert err["code"] == "SCHEMA_UNSUPPORTED", err
    # A fault inside the value (a nested schema, an element) is reported at or below the keyword.
    path = err["issues"][0]["path"]
    assert path == pointer or path.startswith(pointer + "/"), (path, pointer)


def test_nested_faults_name_the_deepest_offending_node():
    _unsupported_at(_field({"properties": {"a": {"type": "int"}}}), "/properties/f/properties/a/type")
    _unsupported_at(_field({"anyOf": [{}, {"minLength": -1}]}), "/properties/f/anyOf/1/minLength")
    _unsupported_at(_field({"items": {"not": {"format": "color"}}}), "/properties/f/items/not/format")
    _unsupported_at(_field({"additionalProperties": {"$ref": "#"}}), "/properties/f/additionalProperties/$ref")
    _unsupported_at({"type": "object", "properties": {"a/b": {"type": "int"}}}, "/properties/a~1b/type")
    _unsupported_at({"type": "object", "properties": {"m~n": {"x-ui": 1}}}, "/properties/m~0n/x-ui")


# --- formats ----------------------------------------------------------------------------------------

FORMAT_VALUES = {
    "date": ("2024-02-29", "2024-02-30"),
    "time": ("12:34:56Z", "25:00:00Z"),
    "date-time": ("2024-01-01T12:00:00+08:00", "2024-01-01 12:00"),
    "duration": ("P1DT2H", "1 day"),
    "uri": ("https://example.com/a?b=c", "example.com/a"),
    "uri-reference": ("../a/b?c", "\\\\bad ref"),
    "url": ("https://example.com/", "/relative/path"),
    "email": ("a@example.com", "no-at-sign"),
    "hostname": ("example.com", "-bad-.com"),
    "ipv4": ("192.168.0.1", "256.1.1.1"),
    "ipv6": ("::1", "12345::"),
    "regex": ("^(?<y>\\d{4})\\k<y>$", "(?P<n>x)"),
    "uuid": ("123e4567-e89b-12d3-a456-426614174000", "123e4567"),
    "json-pointer": ("/a~0b/c~1d", "a/b"),
    "relative-json-pointer": ("0/a", "/a"),
}


def test_every_supported_format_has_values():
    assert set(FORMAT_VALUES) == set(SUPPORTED_FORMATS)
    assert len(SUPPORTED_FORMATS) == 15


@pytest.mark.parametrize("fmt", SUPPORTED_FORMATS)
def test_each_supported_format_is_accepted(fmt):
    # spec: R-SCH-026
    assert Intent({"schema": _field({"type": "string", "format": fmt})}).fields == ("f",)


@pytest.mark.parametrize("fmt", ["color", "int32", "iri", "idn-email", "Date", ""])
def test_an_unknown_format_is_rejected(fmt):
    _unsupported_at(_field({"type": "string", "format": fmt}), "/properties/f/format")


def _data_candidate(value):
    return {
        "data": {"f": value},
        "evidence": [{"path": "/data/f", "mode": "exact", "sources": [{"sourceId": "input", "quote": value}]}],
        "descriptionChecks": [],
        "fieldResults": [{"path": "/data/f", "status": "extracted", "explanation": "输入给出该值。"}],
        "issues": [],
    }


def _parse_value(schema, value):
    intent = Intent({"language": "zh-CN", "schema": _field(schema), "repairAttempts": 0})
    executor = scripted([dumps(ORDER_CORE), dumps(_data_candidate(value))])
    return intent.parse({"input": f"值为 {value} 。"}, executor)


@pytest.mark.parametrize("fmt", SUPPORTED_FORMATS)
def test_each_format_is_validated_through_a_data_candidate(fmt):
    # spec: R-SCH-026 R-SCH-002
    good, bad = FORMAT_VALUES[fmt]
    assert _parse_value({"type": "string", "format": fmt}, good)["data"] == {"f": good}
    with pytest.raises(IntentParseError) as caught:
        _parse_value({"type": "string", "format": fmt}, bad)
    err = caught.value.to_json()
    assert (err["code"], err["stage"]) == ("MODEL_OUTPUT_INVALID", "data")
    assert [i["path"] for i in err["issues"]] == ["/data/f"]


# --- dialect and removed keywords -------------------------------------------------------------------


@pytest.mark.parametrize("dialect", sorted(DRAFT7_IDS))
def test_draft7_dialect_is_accepted_over_http_and_https(dialect):
    # spec: R-SCH-023
    assert Intent({"schema": {"$schema": dialect, "type": "object", "properties": {"f": {}}}}).fields == ("f",)


def test_the_accepted_dialects_are_draft7_over_http_and_https():
    assert "http://json-schema.org/draft-07/schema#" in DRAFT7_IDS
    assert "https://json-schema.org/draft-07/schema#" in DRAFT7_IDS
    assert all("draft-07" in d and d.split(":")[0] in ("http", "https") for d in DRAFT7_IDS)


@pytest.mark.parametrize(
    "dialect",
    [
        "https://json-schema.org/draft/2020-12/schema",
        "https://json-schema.org/draft/2019-09/schema",
        "http://json-schema.org/draft-04/schema#",
        "ftp://json-schema.org/draft-07/schema#",
        "json-schema.org/draft-07/schema#",
        "",
    ],
)
def test_other_dialects_are_rejected(dialect):
    _unsupported_at({"$schema": dialect, "type": "object", "properties": {}}, "/$schema")


def test_id_label_and_custom_messages_are_removed_from_the_payload():
    # spec: R-SCH-024 R-SCH-025 -- accepted, then removed internally; not in schemaReference nor selectedSchema.
    schema = {
        "$id": "urn:example:order",
        "_label": "订单",
        "type": "object",
        "properties": {
            "orderId": {"$id": "#orderId", "_label": "编号", "_customMessages": {"type": "须为字符串"}, "type": "string"},
            "$id": {"type": "string"},  # a property named "$id" is a field, not the keyword
            "items": {"type": "array", "items": {"_label": "x", "type": "object", "properties": {"n": {"_customMessages": {}}}}},
        },
        "_customMessages": {"required": "缺少"},
    }
    intent = Intent({"language": "zh-CN", "schema": schema})
    data = {
        "data": {},
        "evidence": [],
        "descriptionChecks": [],
        "fieldResults": [
            {"path": p, "status": "not_provided", "explanation": "未提供。"} for p in ("/data/orderId", "/data/$id", "/data/items")
        ],
        "issues": [],
    }
    executor = scripted([dumps(ORDER_CORE), dumps(data)])
    assert intent.parse({"input": "查询订单"}, executor)["data"] == {}
    payload = json.loads(executor.requests[1]["payload"])
    for member in ("schemaReference", "selectedSchema"):
        text = json.dumps(payload[member], ensure_ascii=False)
        assert "_label" not in text and "_customMessages" not in text and "urn:example" not in text
        assert "#orderId" not in text
        assert payload[member]["properties"]["$id"] == {"type": "string"}
        assert payload[member]["properties"]["items"] == {
            "type": "array",
            "items": {"type": "object", "properties": {"n": {}}},
        }
    assert payload["schemaReference"]["properties"]["orderId"] == {"type": "string"}
    assert intent.fields == ("orderId", "$id", "items")
    assert "_label" in schema and "$id" in schema["properties"]["orderId"]  # the caller's object is untouched


def test_id_is_not_registered_as_a_reference_target():
    # spec: R-SCH-024 R-SCH-028 -- a $ref to a declared $id is still a $ref.
    schema = {"type": "object", "properties": {"a": {"$id": "#a", "type": "string"}, "b": {"$ref": "#a"}}}
    _unsupported_at(schema, "/properties/b/$ref")


# --- the root ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("schema", [None, {}], ids=["None", "empty"])
def test_no_schema_means_no_fields(schema):
    # spec: R-SCH-012
    intent = Intent({} if schema is None else {"schema": schema})
    assert intent.fields == ()
    executor = scripted([dumps(ORDER_CORE)])
    assert intent.parse({"input": "查询订单 000123"}, executor)["data"] == {}
    assert len(executor.requests) == 1  # no fields: no data stage


@pytest.mark.parametrize(
    ("schema", "pointer"),
    [
        ({"type": "array", "items": {}}, "/type"),
        ({"type": "string"}, "/type"),
        ({"type": ["object"], "properties": {}}, "/type"),
        ({"properties": {"f": {}}}, "/type"),
        ({"type": "object"}, "/properties"),
        ({"type": "object", "properties": []}, "/properties"),
        ({"type": "object", "properties": True}, "/properties"),
    ],
)
def test_a_non_empty_root_is_an_object_with_properties(schema, pointer):
    # spec: R-SCH-011
    _unsupported_at(schema, pointer)


@pytest.mark.parametrize("root", [True, False, [], "object", 1, 1.5])
def test_a_root_that_is_not_an_object_schema_is_rejected(root):
    # spec: R-SCH-011 R-SCH-033 -- boolean schemas only below the root.
    _unsupported_at(root, "")


ROOT_VALUES = {
    "anyOf": [{"required": ["f"]}],
    "oneOf": [{"required": ["f"]}],
    "allOf": [{"required": ["f"]}],
    "not": {"required": ["f"]},
    "enum": [{"f": 1}],
    "const": {"f": 1},
}


def test_root_forbidden_keywords_are_the_seed_list():
    assert set(ROOT_VALUES) == set(ROOT_FORBIDDEN)


@pytest.mark.parametrize("keyword", sorted(ROOT_VALUES))
def test_value_and_combination_keywords_are_rejected_at_the_root(keyword):
    # spec: R-SCH-027
    _unsupported_at({"type": "object", "properties": {"f": {}}, keyword: ROOT_VALUES[keyword]}, "/" + keyword)
    # ... and the same rule is fine inside the top-level property (R-SCH-019).
    assert Intent({"schema": _field({keyword: ROOT_VALUES[keyword]})}).fields == ("f",)


# --- what is never supported ------------------------------------------------------------------------


def test_the_seed_local_reference_example_is_rejected():
    # spec: R-SCH-034 R-SCH-028
    seed = {
        "type": "object",
        "properties": {"orderId": {"type": "string"}, "relatedOrderId": {"$ref": "#/properties/orderId"}},
    }
    _unsupported_at(seed, "/properties/relatedOrderId/$ref")
    # The fix the seed suggests: write the field definition directly.
    seed["properties"]["relatedOrderId"] = {"type": "string"}
    assert Intent({"schema": seed}).fields == ("orderId", "relatedOrderId")


@pytest.mark.parametrize(
    ("schema", "pointer"),
    [
        (_field({"$ref": "http://example.com/s.json"}), "/properties/f/$ref"),
        (_field({"$ref": "#"}), "/properties/f/$ref"),
        ({"type": "object", "properties": {"f": {}}, "definitions": {"d": {}}}, "/definitions"),
        ({"type": "object", "properties": {"f": {}}, "$defs": {"d": {}}}, "/$defs"),
        (_field({"definitions": {}}), "/properties/f/definitions"),
        (_field({"if": {"type": "string"}}), "/properties/f/if"),
        (_field({"then": {"minLength": 1}}), "/properties/f/then"),
        (_field({"else": {"type": "null"}}), "/properties/f/else"),
        (_field({"type": "object", "dependencies": {"a": ["b"]}}), "/properties/f/dependencies"),
        (_field({"type": "object", "patternProperties": {"^x": {}}}), "/properties/f/patternProperties"),
        (_field({"type": "array", "contains": {"type": "string"}}), "/properties/f/contains"),
        (_field({"type": "object", "propertyNames": {"maxLength": 3}}), "/properties/f/propertyNames"),
        (_field({"type": "object", "minProperties": 1}), "/properties/f/minProperties"),
        (_field({"type": "object", "maxProperties": 1}), "/properties/f/maxProperties"),
        (_field({"type": "array", "additionalItems": False}), "/properties/f/additionalItems"),
        (_field({"readOnly": True}), "/properties/f/readOnly"),
        (_field({"contentMediaType": "text/plain"}), "/properties/f/contentMediaType"),
        (_field({"dependentRequired": {}}), "/properties/f/dependentRequired"),
        (_field({"unevaluatedProperties": False}), "/properties/f/unevaluatedProperties"),
        (_field({"nullable": True}), "/properties/f/nullable"),
        ({"type": "object", "properties": {"f": {}}, "x-extension": 1}, "/x-extension"),
        ({"type": "object", "properties": {"f": {}}, "a/b~c": 1}, "/a~1b~0c"),
    ],
)
def test_unsupported_keywords_are_rejected_with_their_pointer(schema, pointer):
    # spec: R-SCH-028 R-SCH-029 R-SCH-030 R-SCH-031
    _unsupported_at(schema, pointer)


@pytest.mark.parametrize("keyword", ["anyOf", "oneOf", "allOf"])
@pytest.mark.parametrize("count", [0, 1, 16, 17])
def test_combination_arrays_hold_one_to_sixteen_schemas(keyword, count):
    # spec: R-SCH-020 -- the reference rejects other lengths with SCHEMA_UNSUPPORTED.
    schema = _field({keyword: [{"type": "string"} for _ in range(count)]})
    if 1 <= count <= 16:
        assert Intent({"schema": schema}).fields == ("f",)
    else:
        _unsupported_at(schema, f"/properties/f/{keyword}")


def test_tuple_items_are_rejected():
    # spec: R-SCH-015
    _unsupported_at(_field({"type": "array", "items": [{"type": "string"}]}), "/properties/f/items")
    _unsupported_at(_field({"type": "array", "items": []}), "/properties/f/items")


def test_boolean_schemas_are_accepted_below_the_root():
    # spec: R-SCH-033 R-SCH-014
    schema = {
        "type": "object",
        "properties": {
            "anything": True,
            "nothing": False,
            "list": {"type": "array", "items": True},
            "closed": {"type": "object", "additionalProperties": False},
            "never": {"not": True},
            "either": {"anyOf": [False, True]},
            "empty": {"type": "array", "items": False},
            "inner": {"type": "object", "properties": {"no": False}},
        },
    }
    intent = Intent({"schema": schema})
    validate = intent.definition.validate
    assert validate(intent.fields, {"anything": {"k": [1]}, "list": [1, "a"], "closed": {}, "either": 3}) == []
    assert [e.path for e in validate(intent.fields, {"nothing": 1})] == ["/data/nothing"]
    assert [e.path for e in validate(intent.fields, {"closed": {"k": 1}})] == ["/data/closed"]
    assert [e.path for e in validate(intent.fields, {"never": 1})] == ["/data/never"]
    # an error from a boolean subschema names the value it rejects, not its parent
    assert [e.path for e in validate(intent.fields, {"empty": ["x"]})] == ["/data/empty/0"]
    assert [e.path for e in validate(intent.fields, {"inner": {"no": 1}})] == ["/data/inner/no"]
    assert validate(intent.fields, {"empty": [], "inner": {}}) == []


# --- plain JSON data only ---------------------------------------------------------------------------


def _cyclic_properties():
    schema = {"type": "object", "properties": {}}
    schema["properties"]["f"] = schema
    return schema, "/properties/f"


def _cyclic_list():
    values = ["a"]
    values.append(values)
    return _field({"enum": values}), "/properties/f/enum/1"


def _cyclic_nested():
    inner = {"type": "object", "properties": {}}
    inner["properties"]["back"] = {"anyOf": [inner]}
    return _field(inner), "/properties/f/properties/back/anyOf/0"


@pytest.mark.parametrize("build", [_cyclic_properties, _cyclic_list, _cyclic_nested])
def test_cycles_are_rejected_without_crashing(build):
    # spec: R-SCH-032
    schema, pointer = build()
    _unsupported_at(schema, pointer)


def test_shared_but_acyclic_subschemas_are_fine():
    # The same object used twice is copyable data, not a cycle.
    shared = {"type": "string"}
    assert Intent({"schema": {"type": "object", "properties": {"a": shared, "b": shared}}}).fields == ("a", "b")


class _Accessor:
    @property
    def value(self):
        return "x"


@pytest.mark.parametrize(
    ("value", "name"),
    [
        ({1, 2}, "set"),
        (_fn, "function"),
        (lambda v: v, "lambda"),
        (float("nan"), "nan"),
        (float("-inf"), "-inf"),
        (b"bytes", "bytes"),
        (("a", "b"), "tuple"),
        (_Accessor(), "object"),
        (1 + 2j, "complex"),
    ],
)
def test_non_json_values_are_rejected_without_crashing(value, name):
    # spec: R-SCH-032
    _unsupported_at(_field({"enum": ["a", value]}), "/properties/f/enum/1")
    _unsupported_at(_field({"default": value}), "/properties/f/default")
    _unsupported_at({"type": "object", "properties": {"f": value}}, "/properties/f")


def test_non_string_keys_are_rejected():
    _unsupported_at({"type": "object", "properties": {1: {}}}, "/properties")
    _unsupported_at(_field({"const": {("t",): 1}}), "/properties/f/const")


# --- resource limits --------------------------------------------------------------------------------


def _nested(levels):
    """A definition whose field chain f -> a -> a ... is ``levels`` schema levels deep below the root."""
    leaf = {"type": "string"}
    for _ in range(levels - 1):
        leaf = {"type": "object", "properties": {"a": leaf}}
    return {"type": "object", "properties": {"f": leaf}}


def test_schema_depth_limit():
    # spec: R-SCH-010 -- D-LIM-004 MAX_SCHEMA_DEPTH
    assert Intent({"schema": _nested(MAX_SCHEMA_DEPTH)}).fields == ("f",)
    err = _too_large(_nested(MAX_SCHEMA_DEPTH + 1))
    assert err["issues"][0]["path"].startswith("/properties/f/properties/a")


@pytest.mark.parametrize("levels", [1_000, 100_000])
def test_very_deep_definitions_are_a_limit_not_a_crash(levels):
    _too_large(_nested(levels))


def test_very_deep_data_inside_a_keyword_is_a_limit_not_a_crash():
    value: list = []
    for _ in range(100_000):
        value = [value]
    _too_large(_field({"const": value}))
    _too_large(_field({"default": value}))


def test_schema_node_limit():
    # spec: R-SCH-010 -- the root, the field, and its properties are MAX_SCHEMA_NODES nodes at most.
    fits = _field({"type": "object", "properties": {f"p{i}": {} for i in range(MAX_SCHEMA_NODES - 2)}})
    assert Intent({"schema": fits}).fields == ("f",)
    over = _field({"type": "object", "properties": {f"p{i}": {} for i in range(MAX_SCHEMA_NODES - 1)}})
    _too_large(over)


def test_top_level_field_limit():
    fits = {"type": "object", "properties": {f"f{i}": {} for i in range(MAX_TOP_LEVEL_FIELDS)}}
    assert len(Intent({"schema": fits}).fields) == MAX_TOP_LEVEL_FIELDS
    over = {"type": "object", "properties": {f"f{i}": {} for i in range(MAX_TOP_LEVEL_FIELDS + 1)}}
    assert _too_large(over)["issues"][0]["path"] == "/properties"


def test_pattern_length_limit():
    assert Intent({"schema": _field({"pattern": "a" * MAX_PATTERN_LENGTH})}).fields == ("f",)
    assert _too_large(_field({"pattern": "a" * (MAX_PATTERN_LENGTH + 1)}))["issues"][0]["path"] == "/properties/f/pattern"


def test_enum_size_limit():
    assert Intent({"schema": _field({"enum": list(range(MAX_ENUM_VALUES))})}).fields == ("f",)
    assert _too_large(_field({"enum": list(range(MAX_ENUM_VALUES + 1))}))["issues"][0]["path"] == "/properties/f/enum"


def test_schema_byte_limit():
    assert Intent({"schema": _field({"description": "d" * (MAX_SCHEMA_BYTES // 2)})}).fields == ("f",)
    _too_large(_field({"description": "d" * MAX_SCHEMA_BYTES}))
    # bytes, not characters: each 中 is three UTF-8 bytes.
    _too_large(_field({"description": "中" * (MAX_SCHEMA_BYTES // 2)}))


# --- ECMA-262 patterns ------------------------------------------------------------------------------


def test_pattern_digits_follow_ecma262():
    # spec: R-SCH-016 -- \d is ASCII-only in ECMA-262 (Python's re would accept Arabic-Indic digits).
    schema = {"type": "string", "pattern": "^\\d{6}$"}
    assert _parse_value(schema, "000123")["data"] == {"f": "000123"}
    for bad in ("00012a", "١٢٣٤٥٦", "0001234"):
        with pytest.raises(IntentParseError) as caught:
            _parse_value(schema, bad)
        assert caught.value.code == "MODEL_OUTPUT_INVALID" and caught.value.issues[0].path == "/data/f"


@pytest.mark.parametrize(
    ("pattern", "good", "bad"),
    [
        ("^\\p{L}+$", "订单é", "订单1"),  # Unicode property escape: ECMA with the u flag, not Python re
        ("^(?<name>x)\\k<name>$", "xx", "xy"),  # ECMA named group and backreference syntax
        ("^\\u{1F600}$", "😀", "x"),  # ECMA code point escape
        ("a", "cat", "dog"),  # unanchored: a search, not a full match
        ("^[^]$", "x", "xy"),  # ECMA's empty negated class matches any character
    ],
)
def test_ecma262_only_patterns_are_accepted_and_applied(pattern, good, bad):
    intent = Intent({"schema": _field({"type": "string", "pattern": pattern})})
    assert _errors(intent, good) == []
    assert _errors(intent, bad) == ["/data/f"]


@pytest.mark.parametrize("pattern", ["(?P<n>x)", "(?P=n)", "(?i)abc", "\\Aabc\\Z", "(?#comment)", "a++", "\\1"])
def test_python_only_patterns_are_rejected(pattern):
    _unsupported_at(_field({"type": "string", "pattern": pattern}), "/properties/f/pattern")


# --- property: generated definitions ----------------------------------------------------------------

json_scalars = st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1) | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=5)
json_values = st.recursive(
    json_scalars, lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=4), c, max_size=3), max_leaves=6
)
names = st.text(max_size=6)
numbers = st.integers(-100, 100) | st.floats(-100, 100, allow_nan=False)
LEAF_KEYWORDS = {
    "type": st.sampled_from(JSON_TYPES) | st.lists(st.sampled_from(JSON_TYPES), min_size=1, max_size=3, unique=True),
    "minItems": st.integers(0, 5),
    "maxItems": st.integers(0, 5),
    "uniqueItems": st.booleans(),
    "minLength": st.integers(0, 5),
    "maxLength": st.integers(0, 5),
    "pattern": st.sampled_from(["^a", "\\d+", "^\\p{L}*$", "(?<n>x)\\k<n>", "[^]", "^$"]),
    "format": st.sampled_from(SUPPORTED_FORMATS),
    "minimum": numbers,
    "maximum": numbers,
    "exclusiveMinimum": numbers,
    "exclusiveMaximum": numbers,
    "multipleOf": st.integers(1, 10) | st.sampled_from([0.5, 0.25, 1.5]),
    "enum": st.lists(json_values, min_size=1, max_size=4),
    "const": json_values,
    "title": st.text(max_size=5),
    "description": st.text(max_size=5),
    "examples": st.lists(json_values, max_size=3),
    "default": json_values,
    "$comment": st.text(max_size=5),
    "$schema": st.sampled_from(sorted(DRAFT7_IDS)),
    "$id": st.text(max_size=5),
    "_label": json_values,
    "_customMessages": json_values,
}
SUB_KEYWORDS = {"properties", "required", "additionalProperties", "items", "anyOf", "oneOf", "allOf", "not"}


def _some_of(table, most=4):
    """A dict of a few keywords of ``table`` (keyword -> strategy of its values)."""
    return st.lists(st.sampled_from(sorted(table)), max_size=most, unique=True).flatmap(
        lambda chosen: st.fixed_dictionaries({k: table[k] for k in chosen})
    )


def _object_schema(children):
    return _some_of(
        {
            **LEAF_KEYWORDS,
            "properties": st.dictionaries(names, children, max_size=3),
            "required": st.lists(names, max_size=3, unique=True),
            "additionalProperties": children,
            "items": children,
            "anyOf": st.lists(children, min_size=1, max_size=3),
            "oneOf": st.lists(children, min_size=1, max_size=3),
            "allOf": st.lists(children, min_size=1, max_size=3),
            "not": children,
        }
    )


schemas = st.recursive(st.booleans() | _some_of(LEAF_KEYWORDS), _object_schema, max_leaves=8)
root_schemas = st.tuples(
    st.dictionaries(names, schemas, max_size=4),
    _some_of(
        {
            "required": st.lists(names, max_size=3, unique=True),
            "title": st.text(max_size=5),
            "description": st.text(max_size=5),
            "$schema": st.sampled_from(sorted(DRAFT7_IDS)),
            "$id": st.text(max_size=5),
            "_label": json_values,
            "additionalProperties": schemas,
        }
    ),
).map(lambda parts: {"type": "object", "properties": parts[0], **parts[1]})


def test_the_generated_keywords_are_the_whole_table():
    assert set(LEAF_KEYWORDS) | SUB_KEYWORDS == set(KEYWORD_CHECKS)


def _schema_nodes(node, path=""):
    """(pointer, node) for every object schema in a definition generated above."""
    if not isinstance(node, dict):
        return
    yield path, node
    for key, sub in node.get("properties", {}).items():
        yield from _schema_nodes(sub, f"{path}/properties/{jsonpointer.escape_token(key)}")
    for keyword in ("additionalProperties", "items", "not"):
        if keyword in node:
            yield from _schema_nodes(node[keyword], f"{path}/{keyword}")
    for keyword in ("anyOf", "oneOf", "allOf"):
        for index, sub in enumerate(node.get(keyword, [])):
            yield from _schema_nodes(sub, f"{path}/{keyword}/{index}")


UNSUPPORTED_NAMES = st.sampled_from(
    ["$ref", "definitions", "$defs", "if", "then", "else", "dependencies", "patternProperties", "contains",
     "propertyNames", "minProperties", "additionalItems", "readOnly", "$anchor", "a/b", "~"]
) | st.text(min_size=1, max_size=6).filter(lambda k: k not in KEYWORD_CHECKS)  # fmt: skip


@given(root_schemas)
def test_generated_definitions_in_the_subset_are_accepted(schema):
    # spec: R-SCH-007 R-SCH-013 .. R-SCH-026 R-SCH-033
    intent = Intent({"schema": schema})
    assert intent.fields == tuple(schema["properties"])
    assert isinstance(intent.definition.validate(intent.fields, {}), list)  # the validator builds


@given(root_schemas, st.data())
def test_one_unsupported_keyword_anywhere_is_rejected_with_its_pointer(schema, data):
    # spec: R-SCH-031 R-SCH-009
    schema = copy.deepcopy(schema)
    nodes = list(_schema_nodes(schema))
    path, node = data.draw(st.sampled_from(nodes), label="node")
    keyword = data.draw(UNSUPPORTED_NAMES, label="keyword")
    node[keyword] = data.draw(json_values, label="value")
    _unsupported_at(schema, f"{path}/{jsonpointer.escape_token(keyword)}")
