"""Coercion rules the mutation run found unpinned (issue 21): the bounds on `$ref` chains and
nesting, `const`, `allOf`, unsupported types, messages, and the short form of a slot's schema."""

from __future__ import annotations

from typing import Any

import pytest

from runner.toolcall.coerce import (
    CoercionError,
    _plainly_valid,
    coerce_arguments,
    coerce_value,
    describe_schema,
)


def _nested_any_of(levels: int) -> dict[str, Any]:
    node: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        node = {"anyOf": [node]}
    return node


def _ref_chain(refs: int) -> dict[str, Any]:
    """A slot reached through `refs` `$ref`s: #/$defs/d0 -> d1 -> ... -> a string."""
    defs: dict[str, Any] = {f"d{i}": {"$ref": f"#/$defs/d{i + 1}"} for i in range(refs - 1)}
    defs[f"d{refs - 1}"] = {"type": "string"}
    return {"$ref": "#/$defs/d0", "$defs": defs}


def test_nesting_up_to_32_levels_is_followed_and_deeper_is_not() -> None:
    # 32 nested anyOfs still reach the string slot; at 33 the slot counts as untyped (parsed as
    # JSON), so "5" becomes 5, which the string branch then refuses.
    assert coerce_value("5", _nested_any_of(32)) == "5"
    assert coerce_arguments({"a": "5"}, {"properties": {"a": _nested_any_of(32)}}) == {"a": "5"}
    with pytest.raises(CoercionError, match="fits none"):
        coerce_value("5", _nested_any_of(33))
    with pytest.raises(CoercionError, match="fits none"):
        coerce_arguments({"a": "5"}, {"properties": {"a": _nested_any_of(33)}})


def test_a_ref_chain_is_followed_for_31_refs_and_given_up_after() -> None:
    # Given up, a slot has no type: its text is parsed as JSON when it is JSON.
    assert coerce_value("5", _ref_chain(31)) == "5"
    assert coerce_value("5", _ref_chain(32)) == 5


def test_a_ref_that_leads_back_to_itself_is_a_slot_of_any_value() -> None:
    looping = {"$ref": "#/$defs/a", "$defs": {"a": {"$ref": "#/$defs/a"}}}
    assert coerce_value("[1]", looping) == [1]
    assert describe_schema(looping) == "any JSON value or text"


def test_a_ref_without_root_resolves_in_the_schema_itself() -> None:
    slot = {"$ref": "#/$defs/s", "$defs": {"s": {"type": "string"}}}
    assert coerce_value("5", slot) == "5"
    assert describe_schema(slot) == "string"


def test_a_remote_ref_is_ignored_and_its_siblings_decide() -> None:
    assert coerce_value("5", {"$ref": "https://example.com/s.json", "type": "string"}) == "5"


def test_a_const_slot_takes_its_one_value() -> None:
    assert coerce_value("5", {"const": 5}) == 5
    assert coerce_value("go", {"const": "go"}) == "go"
    with pytest.raises(CoercionError, match="expected one of: 5; got '6'"):
        coerce_value("6", {"const": 5})


def test_all_of_parts_decide_the_type_also_when_nested() -> None:
    assert coerce_value("5", {"allOf": [{"type": "string"}]}) == "5"
    assert coerce_value("5", {"allOf": [{"allOf": [{"type": "string"}]}]}) == "5"
    schema = {"properties": {"a": {"allOf": [{"allOf": [{"type": "string"}]}]}}}
    assert coerce_arguments({"a": "5"}, schema) == {"a": "5"}
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(20):
        deep = {"allOf": [deep]}
    assert coerce_value("5", deep) == "5"


def test_an_all_of_that_refers_back_to_itself_ends() -> None:
    root = {
        "properties": {"a": {"$ref": "#/$defs/x"}},
        "$defs": {"x": {"allOf": [{"$ref": "#/$defs/x"}]}},
    }
    # No type is ever found: the value is parsed as JSON; jsonschema, which would recurse
    # forever on this schema, is not allowed to crash the call.
    assert coerce_value("5", {"$ref": "#/$defs/x"}, root) == 5
    assert coerce_arguments({"a": "5"}, root) == {"a": 5}


def test_properties_without_a_type_mean_an_object() -> None:
    assert coerce_value('{"k": 1}', {"properties": {"k": {}}}) == {"k": 1}
    with pytest.raises(CoercionError, match="expected a JSON object"):
        coerce_value("x", {"properties": {"k": {}}})
    assert describe_schema({"properties": {}}) == "JSON object"


def test_the_messages_of_a_nullable_type_an_unsupported_type_and_only_null() -> None:
    with pytest.raises(CoercionError) as caught:
        coerce_value("x", {"type": ["null", "integer"]})
    assert caught.value.problems == ["expected an integer (like 42), got 'x'"]
    with pytest.raises(CoercionError) as caught:
        coerce_value("x", {"type": ["strin"]})
    assert caught.value.problems == ["unsupported type 'strin'"]
    with pytest.raises(CoercionError) as caught:
        coerce_value("x", {"type": ["null"]})
    assert caught.value.problems == ["expected null (write null or leave it empty), got 'x'"]


def test_an_any_of_without_null_keeps_an_empty_or_null_text() -> None:
    slot = {"anyOf": [{"type": "string"}, {"type": "integer"}]}
    assert coerce_value("", slot) == ""
    assert coerce_value("null", slot) == "null"


def test_a_branch_that_coerces_but_does_not_validate_says_why() -> None:
    with pytest.raises(CoercionError) as caught:
        coerce_value("5", {"anyOf": [{"type": "integer", "minimum": 10}]})
    assert caught.value.problems == [
        "fits none of the allowed forms: 5 is less than the minimum of 10"
    ]


def test_a_long_value_is_cut_at_80_characters_in_a_message() -> None:
    with pytest.raises(CoercionError) as caught:
        coerce_value("x" * 81, {"type": "integer"})
    assert caught.value.problems == [f"expected an integer (like 42), got '{'x' * 80}...'"]
    with pytest.raises(CoercionError) as caught:
        coerce_value("x" * 80, {"type": "integer"})
    assert caught.value.problems == [f"expected an integer (like 42), got '{'x' * 80}'"]


@pytest.mark.parametrize(
    ("schema", "form"),
    [
        ({}, "any JSON value or text"),
        ({"type": "array"}, "JSON array"),
        ({"type": ["object", "null"]}, "JSON object or null"),
        ({"enum": ["a", 1, None]}, "a|1|null"),
        ({"oneOf": [{"type": "integer"}, {"type": "array"}]}, "integer or JSON array"),
        ({"anyOf": [{"$ref": "#/$defs/n"}, {"type": "null"}], "$defs": {"n": {"type": "number"}}},
         "number or null"),
    ],
)  # fmt: skip
def test_describe_schema_gives_the_short_form_of_a_slot(schema: dict[str, Any], form: str) -> None:
    assert describe_schema(schema) == form


def test_items_without_a_type_mean_an_array() -> None:
    assert coerce_value("[1]", {"items": {}}) == [1]
    with pytest.raises(CoercionError, match="expected a JSON array"):
        coerce_value("x", {"items": {}})
    assert describe_schema({"items": {"type": "string"}}) == "JSON array"


def test_the_fast_path_vouches_only_for_what_certainly_fits() -> None:
    assert _plainly_valid({"x": True}, {"properties": {"x": {"type": "number"}}}) is False
    assert _plainly_valid({"x": 2.5}, {"properties": {"x": {"type": "number"}}}) is True
    assert _plainly_valid({}, {"type": "object", "minProperties": 1}) is False  # not plain
    assert _plainly_valid({"z": 1}, {"properties": {}}) is True  # extra properties allowed
    assert _plainly_valid({"z": 1}, {"properties": {}, "additionalProperties": False}) is False
    assert _plainly_valid({"a": "x"}, {"type": "string", "properties": {}}) is False
    assert _plainly_valid({}, {"properties": {"a": {}}, "required": ["a"]}) is False
    assert _plainly_valid({}, {"properties": {"a": {}}, "required": "a"}) is False
    assert _plainly_valid({"a": 1}, {"properties": {"a": {"type": "string"}}}) is False
    assert _plainly_valid({"a": 1}, {"properties": {"a": {"enum": [1]}}, "required": ["a"]}) is True
    # A boolean schema is not a plain node: jsonschema decides (`false` refuses every value).
    assert _plainly_valid({"a": 1}, {"properties": {"a": False}}) is False
    # anyOf: vouched for only when some branch certainly fits.
    any_of = {"properties": {"a": {"anyOf": [{"type": "integer"}, {"type": "null"}]}}}
    assert _plainly_valid({"a": 3}, any_of) is True
    assert _plainly_valid({"a": "x"}, any_of) is False


def test_arguments_for_a_root_that_is_not_an_object_are_refused_by_jsonschema() -> None:
    with pytest.raises(CoercionError, match="is not of type 'string'"):
        coerce_arguments({"a": "x"}, {"type": "string", "properties": {"a": {"type": "string"}}})


def test_the_validator_cache_holds_at_most_1024_schemas() -> None:
    from runner.toolcall import coerce

    schemas = [{"type": "object", "maxProperties": n} for n in range(1100)]  # kept alive
    for schema in schemas:
        coerce._checked(schema)
        assert len(coerce._VALIDATORS) <= 1024
    assert len(coerce._VALIDATORS) > 1  # cleared when full, not at every new schema
    assert coerce._checked(schemas[-1]) is coerce._checked(schemas[-1])  # cached


def test_a_schema_that_is_not_an_object_is_a_slot_of_any_value() -> None:
    assert coerce_value("[1]", True) == [1]  # type: ignore[arg-type]
    assert describe_schema(True) == "any JSON value or text"  # type: ignore[arg-type]


def test_a_validation_message_is_cut_after_300_characters() -> None:
    schema = {"properties": {"a": {"type": "string", "maxLength": 1}}}
    message = "'{}' is too long"  # 14 characters around the value
    with pytest.raises(CoercionError) as caught:
        coerce_arguments({"a": "x" * 286}, schema)
    assert caught.value.problems == ["<a>: " + message.format("x" * 286)]
    with pytest.raises(CoercionError) as caught:
        coerce_arguments({"a": "x" * 287}, schema)
    assert caught.value.problems == ["<a>: " + message.format("x" * 287)[:300] + "..."]


def test_an_unsupported_type_before_a_supported_one_leaves_the_next_to_try() -> None:
    schema = {"type": "object", "properties": {"n": {"type": ["uuid", "integer"]}}}
    assert coerce_arguments({"n": "5"}, schema) == {"n": 5}


def test_a_remote_ref_reached_through_a_local_one_keeps_the_local_targets_own_keywords() -> None:
    """`#/$defs/A` holds a `$ref` the runner cannot follow (a URL) beside `type: string`: the
    slot is A's string, not the untyped value (a number) of the slot that pointed at it."""
    schema = {
        "type": "object",
        "properties": {"n": {"$ref": "#/$defs/A"}},
        "$defs": {"A": {"$ref": "https://example.com/a.json", "type": "string"}},
    }
    assert coerce_arguments({"n": "5"}, schema) == {"n": "5"}


def _slot(ref: str, defs: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {"n": {"$ref": ref}}, "$defs": defs}


@pytest.mark.parametrize("name", ["S", "a/b", "c~d", "e~1f"])
def test_a_local_ref_finds_its_target_by_the_pointers_escapes(name: str) -> None:
    """`~1` is `/` and `~0` is `~` in a JSON pointer; found, the target's string keeps "5"."""
    pointer = name.replace("~", "~0").replace("/", "~1")
    schema = _slot(f"#/$defs/{pointer}", {name: {"type": "string"}})
    assert coerce_arguments({"n": "5"}, schema) == {"n": "5"}


def test_the_keywords_beside_a_ref_count_at_every_hop() -> None:
    """A's own `type` beside its `$ref` to an untyped B: the value is A's string, not the
    untyped number, which the validator would then refuse."""
    schema = _slot(
        "#/$defs/A", {"A": {"$ref": "#/$defs/B", "type": "string"}, "B": {"description": "any"}}
    )
    assert coerce_arguments({"n": "5"}, schema) == {"n": "5"}


@pytest.mark.parametrize(
    ("kind", "text", "problem"),
    [
        ("array", "5", """expected a JSON array (like ["a", "b"]), got '5'"""),
        ("object", "[1]", """expected a JSON object (like {"key": "value"}), got '[1]'"""),
        ("array", "[1,", """expected a JSON array (like ["a", "b"]); Expecting value"""),
    ],
)
def test_json_of_the_wrong_kind_or_broken_is_answered_with_an_example_of_the_right_one(
    kind: str, text: str, problem: str
) -> None:
    with pytest.raises(CoercionError) as caught:
        coerce_value(text, {"type": kind})
    assert caught.value.problems == [problem]


def test_a_bound_after_an_annotation_is_still_checked() -> None:
    """The quick check skips annotations, and must go on to the keywords after them."""
    schema = {
        "type": "object",
        "properties": {"n": {"description": "at least ten", "type": "integer", "minimum": 10}},
    }
    with pytest.raises(CoercionError) as caught:
        coerce_arguments({"n": "5"}, schema)
    assert caught.value.problems == ["<n>: 5 is less than the minimum of 10"]


def test_an_extra_argument_that_reads_like_a_schema_is_checked_against_its_own() -> None:
    """An extra object argument of annotation keys only, against `additionalProperties` that
    refuse any key: the value is checked against the schema, not the schema against it."""
    schema = {"type": "object", "additionalProperties": {"type": "object", "maxProperties": 0}}
    with pytest.raises(CoercionError):
        coerce_arguments({"extra": '{"title": "x"}'}, schema)


@pytest.mark.parametrize(
    ("ref", "defs"),
    [
        ("#/$defs/missing/deeper", {}),  # the pointer runs past a key that is not there
        ("#/$defs/L/0", {"L": [{"type": "integer"}]}),  # into a list: jsonschema cannot follow
    ],
)
def test_a_ref_the_runner_cannot_follow_leaves_the_value_untyped_and_crashes_nothing(
    ref: str, defs: dict[str, Any]
) -> None:
    """A server's schema is untrusted: the value goes to it as plain JSON, and it judges."""
    assert coerce_arguments({"n": "5"}, _slot(ref, defs)) == {"n": 5}


def test_an_object_that_reads_like_a_schema_is_checked_against_its_branch() -> None:
    """An anyOf branch that refuses any key, and an object of annotation keys only: the value
    is checked against the branch, not the branch against it, and fits no form."""
    schema = {"anyOf": [{"type": "object", "maxProperties": 0}]}
    with pytest.raises(CoercionError):
        coerce_value('{"title": "x"}', schema)


def test_a_missing_required_argument_is_refused_when_the_others_are_named_like_keywords() -> None:
    """Arguments named `description` and `type` (an issue tracker's tool, the kind of object
    to file): the quick check reads them as arguments, never as a schema; `title` is still
    required."""
    schema = {
        "type": "object",
        "properties": {n: {"type": "string"} for n in ("title", "description", "type")},
        "required": ["title"],
    }
    with pytest.raises(CoercionError) as caught:
        coerce_arguments({"description": "d", "type": "object"}, schema)
    assert caught.value.problems == ["arguments: 'title' is a required property"]
