"""Redactor behaviours the mutation run found unpinned (issue 21): adding secrets, the longest
secret first, the JSON quick test, nested structures. Secrets here are long (8+ characters), so
these hold whatever rule applies to short ones."""

from __future__ import annotations

from runner.redact import MASK, Redactor, looks_secret, short_secret_warnings

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


def test_an_eight_character_secret_is_masked_inside_a_longer_word() -> None:
    # 8 characters is the documented threshold for masking anywhere, not only where it stands alone.
    assert Redactor(["abcd1234"]).text("xabcd1234y") == f"x{MASK}y"
    assert Redactor(["abc1234"]).text("xabc1234y") == "xabc1234y"


def test_a_secret_holding_a_quote_is_masked_whole_in_both_json_spellings() -> None:
    import json

    secret = 'pa"ss-w\u00f6rd'  # JSON escapes the quote; ensure_ascii also escapes the o-umlaut
    redactor = Redactor([secret])
    for ascii_only in (True, False):
        line = json.dumps({"t": f"x {secret} y"}, ensure_ascii=ascii_only)
        assert redactor.text(line) == json.dumps({"t": f"x {MASK} y"}, ensure_ascii=ascii_only)


def test_a_longer_escaped_spelling_wins_over_a_shorter_secret_at_the_same_place() -> None:
    import json

    # `abcdefg\u` (9 characters) is a secret of its own and the start of the JSON spelling of
    # `abcdefgé` (`abcdefg\u00e9`, 13): the longer match must win, or `00e9` is left behind.
    redactor = Redactor(["abcdefg\\u", "abcdefg\u00e9"])
    assert redactor.text(json.dumps("abcdefg\u00e9")) == f'"{MASK}"'


def test_names_that_say_secret_and_names_that_do_not() -> None:
    for name in ("GITHUB_TOKEN", "Authorization", "X-Api-Key", "DB_PASSWORD", "OAUTH_CLIENT"):
        assert looks_secret(name) is True, name
    for name in ("MODE", "PATH", "GIT_AUTHOR_NAME", "AUTHOR"):
        assert looks_secret(name) is False, name
    assert looks_secret("AUTHORIZE_URL") is True  # AUTHORI[SZ]E is about auth, AUTHOR is not


def test_short_secret_warnings_name_each_short_value_and_never_the_value() -> None:
    warnings = short_secret_warnings(
        {"A": "abc", "B": "abcd", "C": "abcdefg", "D": "abcdefgh", "E": "x" * 40}
    )
    assert warnings == [
        "warning: secret A is shorter than 4 characters and is not masked (too short to mask "
        "without garbling every artifact)",
        "warning: secret B is shorter than 8 characters: it is masked only where it stands "
        "alone, not inside longer words",
        "warning: secret C is shorter than 8 characters: it is masked only where it stands "
        "alone, not inside longer words",
    ]
    assert short_secret_warnings({}) == []
