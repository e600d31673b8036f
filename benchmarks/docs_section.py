"""A benchmark's own section of docs/benchmarks.md, rewritten between its markers: shared by the
benchmark scripts (run by path, so this sibling module imports as ``docs_section``)."""
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"


def write_section(name: str, heading: str, text: str, path: Path = DOCS) -> None:
    """Put ``text`` between the markers ``<!-- name:start -->`` and ``<!-- name:end -->`` of
    ``path``, leaving the rest of the file as it is.  Without the markers, the block goes at the
    end of the prose under ``heading``, or with a new ``heading`` at the end of the file."""
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    block = f"{start}\n{text}\n{end}"
    doc = path.read_text(encoding="utf-8") if path.exists() else "# Benchmarks\n"
    if start in doc and end in doc:
        before, rest = doc.split(start, 1)
        doc = before + block + rest.split(end, 1)[1]
    elif heading in doc:
        head, tail = doc.split(heading, 1)
        next_heading = tail.find("\n## ")
        body, after = (tail, "") if next_heading < 0 else (tail[:next_heading], tail[next_heading:])
        doc = f"{head}{heading}{body.rstrip()}\n\n{block}\n{after}"
    else:
        doc = f"{doc.rstrip()}\n\n{heading}\n\n{block}\n"
    path.write_text(doc, encoding="utf-8")
