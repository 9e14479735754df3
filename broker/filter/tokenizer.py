"""The tokens of RocketMQ's SQL92 filter language, read on demand as the parser asks for them.

Mirrors the token section of ``org.apache.rocketmq.filter.parser.SelectorParser.jj`` (and the
``SelectorParserTokenManager`` JavaCC generates from it):

* blanks ``" \\t\\n\\r\\f"`` are skipped, as are ``-- …`` comments ended by a line break (without
  one, ``--`` is two minus signs) and ``/* … */`` comments;
* reserved words, case-insensitive: NOT AND OR BETWEEN IN TRUE FALSE NULL IS CONTAINS STARTSWITH
  ENDSWITH;
* ``DECIMAL_LITERAL``: ``0`` or ``[1-9][0-9]*`` with an optional ``l``/``L``;
* ``FLOATING_POINT_LITERAL``: ``5.5``, ``5.``, ``.5``, ``5E10`` with optional exponent sign;
* ``STRING_LITERAL``: single quotes, ``''`` inside for one quote, anything else verbatim;
* ``ID``: ``[a-zA-Z_$][a-zA-Z0-9_$]*`` (ASCII only; property names are case-sensitive);
* ``= <> > >= < <= ( , ) + -``.

Like JavaCC, the longest match wins and, among equally long ones, the earlier definition (so
``in`` is the keyword and ``inx`` an identifier). Lines and columns are counted as
``SimpleCharStream`` counts them (1-based, UTF-16 code units, tab stops every 8 columns), since
the broker's error remarks quote them.
"""

from __future__ import annotations

from dataclasses import dataclass

from broker.filter.java_values import JavaError

EOF = "<EOF>"
DECIMAL = "<DECIMAL_LITERAL>"
FLOATING = "<FLOATING_POINT_LITERAL>"
STRING = "<STRING_LITERAL>"
ID = "<ID>"
KEYWORDS = (
    "NOT", "AND", "OR", "BETWEEN", "IN", "TRUE", "FALSE", "NULL", "IS", "CONTAINS", "STARTSWITH", "ENDSWITH",
)  # fmt: skip
OPERATORS = ("<>", ">=", "<=", "=", ">", "<", "(", ",", ")", "+", "-")  # longest first
BLANKS = " \t\n\r\f"
TAB_SIZE = 8  # SimpleCharStream.tabSize
_ID_START = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_$")
_ID_PART = _ID_START | frozenset("0123456789")
_DIGITS = frozenset("0123456789")
TOKEN_MGR_ERROR = "org.apache.rocketmq.filter.parser.TokenMgrError"


@dataclass(slots=True, frozen=True)
class Token:
    """One token: ``kind`` is a keyword (``"AND"``), an operator (``"<>"``) or a class (``ID``)."""

    kind: str
    image: str
    line: int
    column: int

    def describe(self) -> str:
        """The token as JavaCC's ``ParseException`` names it: ``<ID> "color "`` or ``"AND" "and "``."""
        if self.kind == EOF:
            return EOF
        kind = self.kind if self.kind in (DECIMAL, FLOATING, STRING, ID) else f'"{self.kind}"'
        return f'{kind} "{escape(self.image)} "'


def escape(text: str) -> str:
    """``ParseException.add_escapes``: control characters and non-ASCII as Java escapes."""
    out = []
    for ch in text:
        code = ord(ch)
        if code == 0:
            continue
        special = {"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r", '"': '\\"'}
        special |= {"'": "\\'", "\\": "\\\\"}
        if ch in special:
            out.append(special[ch])
        elif code < 0x20 or code > 0x7E:
            out.extend(f"\\u{unit:04x}" for unit in _utf16_units(ch))
        else:
            out.append(ch)
    return "".join(out)


def _utf16_units(ch: str) -> list[int]:
    data = ch.encode("utf-16-le", "surrogatepass")
    return [int.from_bytes(data[i : i + 2], "little") for i in range(0, len(data), 2)]


class Tokenizer:
    """Hands out tokens one at a time; raises :class:`JavaError` (TokenMgrError) on a lexical error."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self._positions = self._line_columns(text)

    @staticmethod
    def _line_columns(text: str) -> list[tuple[int, int]]:
        """(line, column) of every character, as ``SimpleCharStream.updateLineColumn`` counts."""
        line, column = 1, 0
        prev_cr = prev_lf = False
        positions = []
        for ch in text:
            column += 1
            if prev_lf:
                prev_lf = False
                line, column = line + 1, 1
            elif prev_cr:
                prev_cr = False
                if ch == "\n":
                    prev_lf = True
                else:
                    line, column = line + 1, 1
            if ch == "\r":
                prev_cr = True
            elif ch == "\n":
                prev_lf = True
            elif ch == "\t":
                column -= 1
                column += TAB_SIZE - (column % TAB_SIZE)
            positions.append((line, column))
            if ord(ch) > 0xFFFF:  # two UTF-16 units in Java
                column += 1
        return positions

    def _where(self, index: int) -> tuple[int, int]:
        """Position of a character; past the end, that of the last one (0, 0 for no text), which
        is where JavaCC places its EOF token."""
        if not self._positions:
            return 0, 0
        return self._positions[min(index, len(self._positions) - 1)]

    def next(self) -> Token:
        """The next token (``EOF`` at the end, again and again)."""
        text = self.text
        self._skip_blanks_and_comments()
        start = self.pos
        line, column = self._where(start)
        if start >= len(text):
            return Token(EOF, "", line, column)
        end, kind = self._match(start)
        if end <= start:
            stuck = start + 1 if text[start] in "./" else start  # "." and "/" begin longer tokens
            raise self._lexical_error(start, stuck)
        self.pos = end
        return Token(kind, text[start:end], line, column)

    def _skip_blanks_and_comments(self) -> None:
        text = self.text
        while self.pos < len(text):
            ch = text[self.pos]
            if ch in BLANKS:
                self.pos += 1
            elif text.startswith("--", self.pos):
                ends = [i for i in (text.find("\n", self.pos), text.find("\r", self.pos)) if i >= 0]
                if not ends:
                    return  # no line break: "--" is two minus signs
                self.pos = min(ends) + 1
            elif text.startswith("/*", self.pos):
                close = text.find("*/", self.pos + 2)
                if close < 0:
                    raise self._lexical_error(self.pos, len(text))
                self.pos = close + 2
            else:
                return

    def _match(self, start: int) -> tuple[int, str]:
        """End and kind of the longest token at ``start`` (end == start when none matches)."""
        text = self.text
        ch = text[start]
        if ch == "'":
            return self._string(start), STRING
        if ch in _DIGITS or ch == ".":
            return self._number(start)
        if ch in _ID_START:
            end = start + 1
            while end < len(text) and text[end] in _ID_PART:
                end += 1
            word = text[start:end].upper()
            return end, (word if word in KEYWORDS else ID)
        for op in OPERATORS:
            if text.startswith(op, start):
                return start + len(op), op
        return start, ""

    def _string(self, start: int) -> int:
        text = self.text
        i = start + 1
        while i < len(text):
            if text[i] == "'":
                if text.startswith("''", i):
                    i += 2
                    continue
                return i + 1
            i += 1
        raise self._lexical_error(start, len(text))

    def _number(self, start: int) -> tuple[int, str]:
        text = self.text
        n = len(text)
        i = start
        while i < n and text[i] in _DIGITS:
            i += 1
        int_end = i
        best_end, best_kind = start, ""
        if int_end > start:  # DECIMAL_LITERAL: "0" alone, or [1-9][0-9]* with an optional L
            if text[start] == "0":
                best_end, best_kind = start + 1, DECIMAL
            else:
                best_end, best_kind = int_end, DECIMAL
                if int_end < n and text[int_end] in "lL":
                    best_end = int_end + 1
        float_end = -1
        if int_end < n and text[int_end] == ".":
            j = int_end + 1
            while j < n and text[j] in _DIGITS:
                j += 1
            if int_end > start or j > int_end + 1:  # "5." or ".5" (a lone "." is no number)
                float_end = self._exponent(j)
        elif int_end > start:
            exp_end = self._exponent(int_end)
            if exp_end > int_end:
                float_end = exp_end
        if float_end > best_end:
            return float_end, FLOATING
        return best_end, best_kind

    def _exponent(self, i: int) -> int:
        """End of an optional exponent (``E[+-]digits``) starting at ``i``."""
        text = self.text
        n = len(text)
        if i < n and text[i] in "eE":
            j = i + 1
            if j < n and text[j] in "+-":
                j += 1
            k = j
            while k < n and text[k] in _DIGITS:
                k += 1
            if k > j:
                return k
        return i

    def _lexical_error(self, start: int, stuck: int) -> JavaError:
        """``TokenMgrError.LexicalError`` for a token begun at ``start`` that cannot go on at
        ``stuck``. As JavaCC, it reports ``<EOF>`` one column past the last character when the
        scan ran out of input or stuck at the last character, with what was read (if more than
        one character) as ``after``."""
        text = self.text
        if stuck >= len(text) - 1:
            line, column = self._where(len(text) - 1)
            if text[-1:] in ("\n", "\r"):  # TokenMgrError counts the line break as done
                line, column = line + 1, -1
            read = text[start:]
            message = f"at line {line}, column {column + 1}.  Encountered: <EOF> "
            after = read if len(read) > 1 else ""
        else:
            line, column = self._where(stuck)
            ch = text[stuck]
            message = f'at line {line}, column {column}.  Encountered: "{escape(ch)}" ({ord(ch)}), '
            after = text[start:stuck]
        return JavaError(TOKEN_MGR_ERROR, f'Lexical error {message}after : "{escape(after)}"')
