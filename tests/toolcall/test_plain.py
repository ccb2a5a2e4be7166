"""The fast path that skips jsonschema must never call invalid arguments valid."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from runner.toolcall.coerce import _plainly_valid, _schema_problems, coerce_arguments

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(-3, 3, allow_nan=False),
    st.sampled_from(["", "a", "1", "true", "null"]),
)
TYPES = st.sampled_from(["string", "integer", "number", "boolean", "null", "array", "strin"])
ANNOTATIONS = st.fixed_dictionaries(
    {}, optional={"title": st.just("T"), "description": st.just("D"), "default": SCALARS}
)


def _node(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    keyword = st.one_of(
        st.builds(lambda t: {"type": t}, TYPES | st.lists(TYPES, min_size=1, max_size=3)),
        st.builds(lambda o: {"enum": o}, st.lists(SCALARS, min_size=1, max_size=3)),
        st.builds(lambda c: {"const": c}, SCALARS),
        st.builds(lambda b: {"anyOf": b}, st.lists(children, min_size=1, max_size=3)),
        st.just({"minimum": 1}),  # outside the plain subset: must fall back
        st.just({"maxLength": 1}),
    )
    return st.builds(
        lambda parts, notes: {k: v for part in parts for k, v in part.items()} | notes,
        st.lists(keyword, min_size=0, max_size=2),
        ANNOTATIONS,
    )


NODES = st.recursive(st.builds(dict, ANNOTATIONS), _node, max_leaves=6)
SCHEMAS = st.builds(
    lambda props, required, extra: {
        "type": "object",
        "properties": props,
        "required": required,
        **({} if extra is None else {"additionalProperties": extra}),
    },
    st.dictionaries(st.sampled_from(["a", "b", "c"]), NODES, max_size=3),
    st.lists(st.sampled_from(["a", "b", "c"]), unique=True, max_size=2),
    st.none() | st.booleans() | NODES,
)
ARGUMENTS = st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), SCALARS, max_size=4)


@settings(max_examples=1500, deadline=None)
@given(SCHEMAS, ARGUMENTS)
def test_plainly_valid_arguments_are_valid_for_jsonschema(
    schema: dict[str, Any], arguments: dict[str, Any]
) -> None:
    # The slow path's verdict: jsonschema's problems, none for a broken schema (an unknown type
    # in one branch of an anyOf, say), whose server judges the call itself.
    if _plainly_valid(arguments, schema):
        assert _schema_problems(arguments, schema) == []


def test_a_fitting_branch_beside_a_broken_one_is_still_no_problem() -> None:
    schema = {"type": "object", "properties": {"a": {"anyOf": [{"type": "strin"}, {}]}}}
    assert _plainly_valid({"a": None}, schema) and _schema_problems({"a": None}, schema) == []


def test_the_workspace_schemas_take_the_fast_path() -> None:
    from runner.mcp.local import _arguments

    _, schema = _arguments("read_file")
    assert _plainly_valid({"path": "a", "start_line": 2, "end_line": None}, schema)
    assert not _plainly_valid({"start_line": 2}, schema)  # path missing: jsonschema says why


def test_a_bad_value_still_gets_jsonschema_s_message() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 5}}}
    try:
        coerce_arguments({"n": "3"}, schema)
    except ValueError as error:
        assert "3 is less than the minimum of 5" in str(error)
    else:
        raise AssertionError("3 passed a minimum of 5")
