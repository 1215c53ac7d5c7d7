"""One-line CSV: split a line into fields (quotes, doubled quotes, custom delimiter) and join fields back."""


def parse_line(line, delimiter=","):
    """Split one CSV line into a list of strings; quoted fields may hold delimiters and doubled quotes."""
    if len(delimiter) != 1:
        raise ValueError("delimiter must be one character")
    fields = []
    field = []
    in_quotes = False
    i = 0
    while i < len(line):
        char = line[i]
        if in_quotes:
            if char == '"':
                if i + 1 < len(line) and line[i + 1] == '"':
                    field.append('"')
                    i += 1
                else:
                    in_quotes = False
            else:
                field.append(char)
        elif char == '"' and not field:
            in_quotes = True
        elif char == delimiter:
            fields.append("".join(field))
            field = []
        else:
            field.append(char)
        i += 1
    if in_quotes:
        raise ValueError("unterminated quoted field")
    fields.append("".join(field))
    return fields


def needs_quotes(value, delimiter=","):
    """True when a field must be quoted to survive a round trip."""
    if value != value.strip():
        return True
    return delimiter in value or '"' in value or "\n" in value


def format_field(value, delimiter=","):
    """One field as CSV text, quoted and with doubled quotes when needed."""
    text = str(value)
    if needs_quotes(text, delimiter):
        return '"' + text.replace('"', '""') + '"'
    return text


def format_line(values, delimiter=","):
    """Join values into one CSV line."""
    return delimiter.join(format_field(v, delimiter) for v in values)


def parse_table(text, delimiter=","):
    """Rows of a CSV text (one record per line, blank lines skipped) as dicts keyed by the header row."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return []
    header = parse_line(lines[0], delimiter)
    rows = []
    for number, line in enumerate(lines[1:], start=2):
        values = parse_line(line, delimiter)
        if len(values) != len(header):
            raise ValueError(f"line {number}: expected {len(header)} fields, got {len(values)}")
        rows.append(dict(zip(header, values)))
    return rows


def column(rows, name):
    """The values of one column of parsed rows, in order."""
    return [row[name] for row in rows if name in row]
