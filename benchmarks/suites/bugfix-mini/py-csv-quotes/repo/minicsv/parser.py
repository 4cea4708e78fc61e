"""Splits and joins one CSV row (RFC 4180 subset: comma separator, double-quote quoting)."""


def split_row(line, sep=","):
    """Returns the fields of one CSV row."""
    fields = []
    field = []
    quoted = False
    i = 0
    while i < len(line):
        ch = line[i]
        if quoted:
            if ch == '"':
                quoted = False
            else:
                field.append(ch)
        elif ch == '"':
            quoted = True
        elif ch == sep:
            fields.append("".join(field))
            field = []
        else:
            field.append(ch)
        i += 1
    fields.append("".join(field))
    return fields


def join_row(fields, sep=","):
    """Formats fields as one CSV row, quoting where needed."""
    out = []
    for f in fields:
        if any(c in f for c in (sep, '"', "\n")):
            out.append('"' + f.replace('"', '""') + '"')
        else:
            out.append(f)
    return sep.join(out)
