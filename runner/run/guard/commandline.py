"""What a shell command line holds, for permission rules (DESIGN 18): its simple commands.

`split_command` reads a command as `/bin/sh -c` would split it, well enough to say two things:
the simple commands it contains, however deep (inside `$(...)`, backticks, `( ... )`, `<(...)`,
after `;`, `&&`, `||`, `|`, `&` or a newline), each as its words after quote removal joined by
single spaces with leading `NAME=value` assignments and `!` dropped, so that a deny rule can match
any of them; and whether the line is one plain simple command, the only kind an allow rule may
match: no operator, redirection, substitution, subshell, assignment prefix or reserved word.

It is a scanner of one pass over at most MAX_COMMAND_CHARS characters (no regex, no backtracking;
nesting is bounded by MAX_DEPTH), not a shell: what it cannot read (an unterminated quote or
substitution, a line too long or too deep) is `readable=False`, which no allow rule matches.
`bashlex` (GPL-3.0, last release January 2023, no `case` inside substitutions) did not fit.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["MAX_COMMAND_CHARS", "MAX_DEPTH", "CommandLine", "split_command"]

MAX_COMMAND_CHARS = 64 * 1024
"""Longer command lines are not read (an allow rule never matches them)."""
MAX_DEPTH = 32
"""Deeper nesting of substitutions and subshells is not read."""
_SEPARATORS = frozenset(";&|\n")
_REDIRECTS = frozenset("<>")
_BLANKS = frozenset(" \t")
_RESERVED = frozenset(
    [
        "!",
        "{",
        "}",
        "if",
        "then",
        "else",
        "elif",
        "fi",
        "do",
        "done",
        "case",
        "esac",
        "while",
        "until",
        "for",
        "in",
        "function",
        "select",
        "[[",
        "]]",
        "time",
        "coproc",
    ]
)
_NAME_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_NAME_REST = _NAME_START | frozenset("0123456789")


@dataclass
class CommandLine:
    """A command line, read."""

    commands: list[str] = field(default_factory=list)
    """Every simple command inside, its words joined by single spaces, in order of reading."""
    simple: bool = True
    """One simple command and nothing else (no operator, redirection, substitution, ...)."""
    readable: bool = True
    """False when the line could not be read to its end (unterminated, too long, too deep)."""

    @property
    def plain(self) -> str | None:
        """The one simple command an allow rule may match, or None when there is none."""
        if self.readable and self.simple and len(self.commands) == 1:
            return self.commands[0]
        return None


def split_command(text: str) -> CommandLine:
    """The simple commands of `text` and whether it is one plain simple command."""
    line = CommandLine()
    if len(text) > MAX_COMMAND_CHARS:
        line.readable = line.simple = False
        return line
    # Blank lines around the command (a model's trailing newline) separate nothing.
    text = text.strip(" \t\n")
    scanner = _Scanner(text, line)
    end = scanner.commands(0, None, 0)
    if end < len(text):  # a `)` with no `(`
        line.readable = False
    return line


class _Scanner:
    """One pass over the text; nested parts are read by recursion on the same text."""

    def __init__(self, text: str, line: CommandLine) -> None:
        self.text = text
        self.line = line

    def commands(self, i: int, close: str | None, depth: int) -> int:
        """Read commands from `i` up to the `close` character (or the end); the index after it."""
        if depth > MAX_DEPTH:
            self.line.readable = False
            return len(self.text)
        words: list[str] = []
        word: list[str] | None = None
        skip_next = False  # the next word is a redirection's target, not part of the command
        text = self.text
        while i < len(text):
            char = text[i]
            if close is not None and char == close:
                self._end(words, word, skip_next)
                return i + 1
            if char in _BLANKS:
                skip_next = self._word(words, word, skip_next)
                word, i = None, i + 1
            elif char in _SEPARATORS:
                skip_next = self._word(words, word, skip_next)
                self._end(words, None, False)
                words, word = [], None
                self.line.simple = False
                i += 1
            elif char in _REDIRECTS:
                if word is not None and "".join(word).isdigit():
                    word = None  # `2>`: the descriptor is no word of the command
                skip_next = self._word(words, word, skip_next)
                word = None
                self.line.simple = False
                i, skip_next = self._redirection(i, depth)
            elif char == "(":
                skip_next = self._word(words, word, skip_next)
                self._end(words, None, False)
                words, word = [], None
                self.line.simple = False
                i = self.commands(i + 1, ")", depth + 1)
            elif char == ")":
                self.line.readable = False
                return len(text)
            elif char == "#" and word is None:
                i = self._comment(i)
            else:
                word = word if word is not None else []
                i = self._word_part(i, word, depth)
        if close is not None:
            self.line.readable = False
        self._end(words, word, skip_next)
        return i

    def _word(self, words: list[str], word: list[str] | None, skip: bool) -> bool:
        """Add a finished word (unless it is a redirection's target); the new `skip`."""
        if word is None:
            return skip
        if not skip:
            words.append("".join(word))
        return False

    def _end(self, words: list[str], word: list[str] | None, skip: bool) -> None:
        """Record a finished simple command."""
        self._word(words, word, skip)
        start = 0
        while start < len(words) and (_assignment(words[start]) or words[start] in _RESERVED):
            self.line.simple = False
            start += 1
        command = " ".join(w for w in words[start:] if w)
        if command:
            self.line.commands.append(command)

    def _redirection(self, i: int, depth: int) -> tuple[int, bool]:
        """Past the operator at `i` (`>`, `>>`, `2>&1`'s `>&`, `<<`, `<(`, `>|`, `&>`...), and
        whether a target word follows (not after `<(...)`, a command of its own)."""
        text = self.text
        if i + 1 < len(text) and text[i + 1] == "(":  # <(...) and >(...): a command inside
            return self.commands(i + 2, ")", depth + 1), False
        i += 1
        while i < len(text) and text[i] in "<>&|-":
            i += 1
        return i, True

    def _comment(self, i: int) -> int:
        newline = self.text.find("\n", i)
        return len(self.text) if newline < 0 else newline

    def _word_part(self, i: int, word: list[str], depth: int) -> int:
        """Read one piece of a word at `i` (a character, a quoted string, a substitution)."""
        text = self.text
        char = text[i]
        if char == "\\":
            if i + 1 < len(text) and text[i + 1] != "\n":
                word.append(text[i + 1])
            return i + 2
        if char == "'":
            end = text.find("'", i + 1)
            if end < 0:
                self.line.readable = False
                return len(text)
            word.append(text[i + 1 : end])
            return end + 1
        if char == '"':
            return self._double_quoted(i + 1, word, depth)
        if char == "$" and i + 1 < len(text) and text[i + 1] == "(":
            return self._substitution(i, word, depth)
        if char == "`":
            return self._backticks(i, word, depth)
        word.append(char)
        return i + 1

    def _double_quoted(self, i: int, word: list[str], depth: int) -> int:
        text = self.text
        while i < len(text):
            char = text[i]
            if char == '"':
                return i + 1
            if char == "\\" and i + 1 < len(text):
                following = text[i + 1]
                word.append(following if following in '"\\$`' else "\\" + following)
                i += 2
            elif char == "$" and i + 1 < len(text) and text[i + 1] == "(":
                i = self._substitution(i, word, depth)
            elif char == "`":
                i = self._backticks(i, word, depth)
            else:
                word.append(char)
                i += 1
        self.line.readable = False
        return i

    def _substitution(self, i: int, word: list[str], depth: int) -> int:
        """`$(...)` (and `$((...))`) at `i`: its commands are read; the word keeps its text."""
        self.line.simple = False
        end = self.commands(i + 2, ")", depth + 1)
        word.append(self.text[i:end])
        return end

    def _backticks(self, i: int, word: list[str], depth: int) -> int:
        self.line.simple = False
        text = self.text
        inner: list[str] = []
        j = i + 1
        while j < len(text) and text[j] != "`":
            if text[j] == "\\" and j + 1 < len(text):
                inner.append(text[j + 1])
                j += 2
            else:
                inner.append(text[j])
                j += 1
        if j >= len(text):
            self.line.readable = False
            return len(text)
        if depth + 1 > MAX_DEPTH:
            self.line.readable = False
        else:
            _Scanner("".join(inner), self.line).commands(0, None, depth + 1)
        word.append(text[i : j + 1])
        return j + 1


def _assignment(word: str) -> bool:
    """`NAME=...` (the shell's test; quotes were removed, which only loosens it)."""
    equals = word.find("=")
    if equals <= 0 or word[0] not in _NAME_START:
        return False
    return all(char in _NAME_REST for char in word[1:equals])
