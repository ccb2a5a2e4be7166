"""Redactor behaviours the mutation run found unpinned (issue 21): adding secrets, the longest
secret first, the JSON quick test, nested structures. Secrets here are long (8+ characters), so
these hold whatever rule applies to short ones."""

from __future__ import annotations

from runner.redact import MASK, Redactor

LONG = "abcdefgh1234"
LONGER = "abcdefgh1234-tail"


def test_with_secrets_masks_the_old_and_the_new() -> None:
    base = Redactor(["first-secret"])
    both = base.with_secrets(["second-secret"])
    assert both.text("first-secret second-secret") == f"{MASK} {MASK}"
    assert base.text("second-secret") == "second-secret"  # the original is unchanged


def test_the_longest_secret_is_masked_first_in_either_order() -> None:
    for secrets in ([LONG, LONGER], [LONGER, LONG]):
        assert Redactor(secrets).text(f"x {LONGER} y") == f"x {MASK} y"


def test_a_secret_shorter_than_four_characters_is_never_masked() -> None:
    redactor = Redactor(["abc", "", LONG])
    assert redactor.text("abc abcabc") == "abc abcabc"
    assert redactor.text(LONG) == MASK


def test_no_secrets_means_nothing_masked_and_no_json_search() -> None:
    redactor = Redactor([])
    assert redactor.text("anything") == "anything"
    assert redactor.may_be_in_json('{"a": "anything"}') is False
    data = {"k": ["v"]}
    assert redactor.data(data) is data


def test_the_json_quick_test_finds_a_secret_and_passes_clean_text() -> None:
    redactor = Redactor([LONG])
    assert redactor.may_be_in_json(f'{{"a": "x{LONG}y"}}') is True
    assert redactor.may_be_in_json('{"a": "nothing here"}') is False


def test_a_secret_holding_a_quote_or_backslash_is_searched_for_in_json_text() -> None:
    import json

    for secret in ('pass"word-long', "back\\slash-long"):
        line = json.dumps({"result": f"the value is {secret}"})
        redactor = Redactor([secret])
        assert redactor.may_be_in_json(line) is True
        assert secret not in json.dumps(redactor.data(json.loads(line)))


def test_nested_lists_tuples_and_dicts_are_masked_and_other_values_kept() -> None:
    redactor = Redactor([LONG])
    data = {"a": [LONG, (LONG, 3)], "b": {"c": f"x{LONG}"}, "n": 1.5, "t": True, "z": None}
    assert redactor.data(data) == {
        "a": [MASK, [MASK, 3]],
        "b": {"c": f"x{MASK}"},
        "n": 1.5,
        "t": True,
        "z": None,
    }
