"""A tiny stack machine: a program is a list of (op, arg) lines; run() returns the final stack."""

ARITY = {"push": 1, "pop": 0, "dup": 0, "swap": 0, "add": 0, "sub": 0, "mul": 0, "div": 0, "mod": 0,
         "jmp": 1, "jz": 1, "lt": 0, "eq": 0, "print": 0, "halt": 0}


def assemble(text):
    """Parse lines like `push 3` or `jz 7` into [(op, arg or None)]; blank lines and `;` comments skipped."""
    program = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split(";", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        op = parts[0].lower()
        if op not in ARITY:
            raise ValueError(f"line {number}: unknown instruction {op!r}")
        if len(parts) - 1 != ARITY[op]:
            raise ValueError(f"line {number}: {op} takes {ARITY[op]} argument(s)")
        program.append((op, int(parts[1]) if ARITY[op] else None))
    return program


def _pop2(stack):
    """Pop b then a, returning (a, b); IndexError when fewer than two values."""
    if len(stack) < 2:
        raise IndexError("stack underflow")
    b = stack.pop()
    a = stack.pop()
    return a, b


def run(program, max_steps=10000):
    """Execute an assembled program; returns (stack, printed values)."""
    stack, output = [], []
    pc, steps = 0, 0
    while pc < len(program):
        steps += 1
        if steps > max_steps:
            raise RuntimeError("step limit exceeded")
        op, arg = program[pc]
        pc += 1
        if op == "push":
            stack.append(arg)
        elif op == "pop":
            stack.pop()
        elif op == "dup":
            stack.append(stack[-1])
        elif op == "swap":
            a, b = _pop2(stack)
            stack.extend([b, a])
        elif op in ("add", "sub", "mul", "div", "mod", "lt", "eq"):
            a, b = _pop2(stack)
            stack.append(binary(op, a, b))
        elif op == "jmp":
            pc = arg
        elif op == "jz":
            if stack.pop() == 0:
                pc = arg
        elif op == "print":
            output.append(stack[-1])
        elif op == "halt":
            break
    return stack, output


def binary(op, a, b):
    """The result of a two-operand instruction; division truncates toward zero."""
    if op == "add":
        return a + b
    if op == "sub":
        return a - b
    if op == "mul":
        return a * b
    if op in ("div", "mod") and b == 0:
        raise ZeroDivisionError(f"{op} by zero")
    if op == "div":
        quotient = abs(a) // abs(b)
        return quotient if (a < 0) == (b < 0) else -quotient
    if op == "mod":
        return a - b * binary("div", a, b)
    if op == "lt":
        return 1 if a < b else 0
    return 1 if a == b else 0


def evaluate(text):
    """Assemble and run `text`, returning the top of the stack (None when empty)."""
    stack, _ = run(assemble(text))
    return stack[-1] if stack else None
