"""A tokenizer for a small expression language: numbers, names, strings, operators, with positions."""

OPERATORS = ("==", "!=", "<=", ">=", "&&", "||", "+", "-", "*", "/", "%", "<", ">", "=", "!", "(", ")", ",")
KEYWORDS = ("if", "else", "let", "true", "false")


class Token:
    """A token: kind, text and the (line, column) where it starts, both 1-based."""

    def __init__(self, kind, text, line, column):
        self.kind = kind
        self.text = text
        self.line = line
        self.column = column

    def __eq__(self, other):
        return (self.kind, self.text, self.line, self.column) == (other.kind, other.text, other.line, other.column)

    def __repr__(self):
        return f"Token({self.kind!r}, {self.text!r}, {self.line}, {self.column})"


def tokenize(source):
    """Tokens of `source`, skipping whitespace and `#` comments; SyntaxError names line and column."""
    tokens = []
    line, column, i = 1, 1, 0
    while i < len(source):
        char = source[i]
        if char == "\n":
            line += 1
            column = 1
            i += 1
            continue
        if char in " \t":
            column += 1
            i += 1
            continue
        if char == "#":
            while i < len(source) and source[i] != "\n":
                i += 1
            continue
        start = i
        if char.isdigit():
            while i < len(source) and (source[i].isdigit() or source[i] == "."):
                i += 1
            kind = "number"
        elif char.isalpha() or char == "_":
            while i < len(source) and (source[i].isalnum() or source[i] == "_"):
                i += 1
            kind = "keyword" if source[start:i] in KEYWORDS else "name"
        elif char == '"':
            i += 1
            while i < len(source) and source[i] != '"':
                if source[i] == "\n":
                    raise SyntaxError(f"{line}:{column}: newline in string")
                i += 1
            if i >= len(source):
                raise SyntaxError(f"{line}:{column}: unterminated string")
            i += 1
            kind = "string"
        else:
            op = next((o for o in OPERATORS if source.startswith(o, i)), None)
            if op is None:
                raise SyntaxError(f"{line}:{column}: unexpected character {char!r}")
            i += len(op)
            kind = "op"
        tokens.append(Token(kind, source[start:i], line, column))
        column += i - start
    return tokens


def kinds(source):
    """Just the token kinds of `source`."""
    return [t.kind for t in tokenize(source)]


def texts(source):
    """Just the token texts of `source`."""
    return [t.text for t in tokenize(source)]


def count_names(source):
    """{name: occurrences} of the identifiers (not keywords) in `source`."""
    counts = {}
    for token in tokenize(source):
        if token.kind == "name":
            counts[token.text] = counts.get(token.text, 0) + 1
    return counts
