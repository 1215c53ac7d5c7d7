"""A tiny arithmetic evaluator: + - * / and parentheses over integers, with unary minus."""


def tokenize(text):
    """Split an expression into integer and operator tokens."""
    tokens = []
    i = 0
    while i < len(text):
        char = text[i]
        if char.isspace():
            i += 1
        elif char.isdigit():
            j = i
            while j < len(text) and text[j].isdigit():
                j += 1
            tokens.append(int(text[i:j]))
            i = j
        elif char in "+-*/()":
            tokens.append(char)
            i += 1
        else:
            raise SyntaxError(f"unexpected character {char!r} at {i}")
    return tokens


class Parser:
    """Recursive-descent parser that evaluates while it parses."""

    def __init__(self, tokens):
        self.tokens = tokens
        self.pos = 0

    def peek(self):
        """The current token, or None at the end."""
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self):
        """Consume and return the current token."""
        token = self.peek()
        self.pos += 1
        return token

    def expression(self):
        """expression := term (('+' | '-') term)*"""
        value = self.term()
        while self.peek() in ("+", "-"):
            if self.take() == "+":
                value = value + self.term()
            else:
                value = value - self.term()
        return value

    def term(self):
        """term := factor (('*' | '/') factor)*; '/' is exact division."""
        value = self.factor()
        while self.peek() in ("*", "/"):
            op = self.take()
            right = self.factor()
            if op == "*":
                value = value * right
            else:
                if right == 0:
                    raise ZeroDivisionError("division by zero")
                value = value / right
        return value

    def factor(self):
        """factor := '-' factor | '(' expression ')' | integer"""
        token = self.take()
        if token == "-":
            return -self.factor()
        if token == "(":
            value = self.expression()
            if self.take() != ")":
                raise SyntaxError("missing ')'")
            return value
        if isinstance(token, int):
            return token
        raise SyntaxError(f"unexpected token {token!r}")


def evaluate(text):
    """Evaluate an expression string."""
    parser = Parser(tokenize(text))
    value = parser.expression()
    if parser.peek() is not None:
        raise SyntaxError(f"unexpected token {parser.peek()!r}")
    return value
