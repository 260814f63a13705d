"""A strict parser of Prometheus's text exposition format, written from its documented grammar
(https://prometheus.io/docs/instrumenting/exposition_formats/, 'Text format details'), to check
what the library renders without the library's own code.

It refuses what the grammar refuses: a line that is neither a comment nor a sample, a bad
metric or label name, an unescaped quote or a bad escape in a label value, a value Go's
ParseFloat would not read, a second `# TYPE` or `# HELP` for a name, a `# TYPE` after the
name's first sample, and text whose last line does not end with a line feed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

METRIC_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL_NAME = r"[a-zA-Z_][a-zA-Z0-9_]*"
LABEL_VALUE = r'"(?:[^"\\\n]|\\[\\"n])*"'
VALUE = r"[+-]?(?:Inf|NaN|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)"
HELP = re.compile(rf"# HELP ({METRIC_NAME}) (.*)")
TYPE = re.compile(rf"# TYPE ({METRIC_NAME}) (counter|gauge|histogram|summary|untyped)")
LABEL = re.compile(rf"({LABEL_NAME})=({LABEL_VALUE})")
SAMPLE = re.compile(
    rf"({METRIC_NAME})(?:\{{((?:{LABEL_NAME}={LABEL_VALUE})(?:,{LABEL_NAME}={LABEL_VALUE})*,?)?\}})?"
    rf" ({VALUE})(?: (-?\d+))?"
)


@dataclass
class Exposition:
    """What a text holds: each name's help, type and samples (labels -> value)."""

    helps: dict[str, str] = field(default_factory=dict)
    types: dict[str, str] = field(default_factory=dict)
    samples: dict[str, list[tuple[dict[str, str], float]]] = field(default_factory=dict)

    def value(self, name: str, **labels: str) -> float:
        [found] = [v for got, v in self.samples.get(name, []) if got == labels]
        return found


def _unescape(quoted: str) -> str:
    return re.sub(r"\\([\\\"n])", lambda m: "\n" if m[1] == "n" else m[1], quoted[1:-1])


def parse(text: str) -> Exposition:
    """The exposition in `text`; AssertionError naming the first line the grammar refuses."""
    assert text.endswith("\n"), "the last line must end with a line feed"
    out = Exposition()
    for number, line in enumerate(text[:-1].split("\n"), start=1):
        if not line.strip():
            continue
        if (m := HELP.fullmatch(line)) is not None:
            assert m[1] not in out.helps, f"line {number}: a second HELP for {m[1]}"
            assert re.fullmatch(r"(?:[^\\]|\\[\\n])*", m[2]), f"line {number}: bad escape"
            out.helps[m[1]] = m[2].replace("\\n", "\n").replace("\\\\", "\\")
        elif (m := TYPE.fullmatch(line)) is not None:
            assert m[1] not in out.types, f"line {number}: a second TYPE for {m[1]}"
            assert m[1] not in out.samples, f"line {number}: TYPE after a sample of {m[1]}"
            out.types[m[1]] = m[2]
        elif line.startswith("#"):
            continue  # any other comment
        elif (m := SAMPLE.fullmatch(line)) is not None:
            labels = {k: _unescape(v) for k, v in LABEL.findall(m[2] or "")}
            out.samples.setdefault(m[1], []).append((labels, float(m[3])))
        else:
            raise AssertionError(f"line {number} is not in the text format: {line!r}")
    return out
