"""Command line: ``ektelo-pgm run`` measures a marginal workload privately and reconstructs it;
``synth`` turns a raw table into private synthetic records, ``answer`` into private marginal
counts, and ``schema`` writes a table's privately inferred schema for a person to edit;
``evaluate`` compares a synthetic table with the real one (error table, HTML/PNG report),
``compare`` plots reconstructions' workload error against epsilon, and ``example`` writes a raw
example table to try the others on."""
from __future__ import annotations

import argparse
import os
import signal
import sys

from . import progress, sample_data
from .dataset import Dataset
from .errors import ExpectedError, InputError
from .cli_help import (ANSWER_HELP, COMPARE_HELP, EVALUATE_HELP, EXAMPLE_HELP, EXIT_CODES, SCHEMA_HELP,
                       SYNTH_HELP)
from .estimate import SAMPLING
from .options import (MAX_BINS, MAX_EPSILON, bins, check_output, column_names, count, epsilon, fraction, mechanism_name,
                      max_memory_argument, path, quoted_newlines_argument, seed, separator, share, text_encoding)
from .privacy import ADD_REMOVE, Budget
from .schema import blank_records, column_changes, left_out_reasons
from .stopping import stopped_by_signals
from .table_io import PARQUET, is_parquet, table_files, write_table
from .uncertainty import LEVEL

#: Attributes of the built-in census kept by default: 32,000 cells, small enough for every
#: full-vector reconstruction.
BUILTIN_ATTRS = ("age", "education", "hours", "income")
#: The marginal order ``answer`` gives by default (1 where the schema keeps one column).
ANSWER_K = 2
#: Said when a CSV is not what ``--data`` takes.
RAW_CSV = ("--data takes an integer-coded CSV with its domain JSON; encode a raw one (strings, numbers) "
           "first with ektelo_pgm.TableEncoder")


def reconstruction_operators() -> dict:
    """Every reconstruction operator by its command-line name, with default settings."""
    from .operators import reconstruct

    return {
        "least-squares": reconstruct.LeastSquares,
        "local-least-squares": reconstruct.LocalLeastSquares,
        "nnls": reconstruct.NonNegativeLeastSquares,
        "mw": reconstruct.MultiplicativeWeights,
        "pgm": reconstruct.PGM,
        "appgm": reconstruct.APPGM,
    }


def chosen_operators(names) -> dict:
    """``{name: operator}`` for the reconstruction operators named on the command line."""
    operators = reconstruction_operators()
    unknown = [name for name in names if name not in operators]
    if unknown:
        raise InputError(f"unknown reconstruction {unknown}; choose from {sorted(operators)}")
    return {name: operators[name]() for name in names}


def load_data(args) -> Dataset:
    """The dataset the arguments name, restricted to ``--attrs`` when given."""
    if args.data == "builtin":
        data = sample_data.synthetic_bayes_net(args.records, rng=args.seed)
        attrs = args.attrs or BUILTIN_ATTRS
    elif args.data.endswith(".csv"):
        if not args.domain:
            raise InputError(f"--data CSV needs --domain DOMAIN.json (the {{attribute: size}} file); {RAW_CSV}")
        try:
            data, attrs = Dataset.load(args.data, args.domain), args.attrs
        except ValueError as err:
            raise InputError(f"{err}; {RAW_CSV}") from None
    else:
        data, attrs = sample_data.load(args.data, args.data_dir), args.attrs
    return data.project(attrs) if attrs else data


def run(args) -> None:
    from .operators import measure, select
    from .plans import compare, table
    from .workload import kway_marginals

    operators = chosen_operators(args.reconstruct)
    data = load_data(args)
    k = min(args.k, len(data.domain))
    workload = kway_marginals(data.domain, k)
    budget = Budget.pure(args.epsilon)
    queries = select.Workload(workload).select(data.domain)
    measurements = measure.Laplace().measure(data, queries, budget, rng=args.seed)
    print(f"data: {len(data)} records over {data.domain} ({data.domain.size():,} cells)")
    print(f"workload: all {len(workload.cliques)} {k}-way marginals, measured with Laplace noise; "
          f"epsilon spent {budget.spent:g} of {budget.total:g}")
    rows = compare(data.domain, measurements, operators, workload, data)
    print(table(rows))


TABLE_FORMATS = (".csv",) + PARQUET


class Parser(argparse.ArgumentParser):
    """An argparse parser whose usage errors are one line naming the option, as every other
    error of the command line (exit code 2)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())} (see {self.prog} --help)\n")


def declared_schema(args):
    """The --schema file read before any data is read (a ``Declared``), or None; a file that is
    not a schema is refused naming --schema."""
    from .schema import Declared

    if args.schema is None:
        return None
    try:
        return Declared.read(args.schema)
    except (OSError, ValueError, TypeError, KeyError) as err:
        raise InputError(f"--schema {args.schema}: not a readable schema ({' '.join(str(err).split())})") from None


def metadata(args):
    """The --metadata file read before any data is read (a ``Metadata``), or None."""
    from .schema import Metadata

    if args.metadata is None:
        return None
    try:
        return Metadata.read(args.metadata)
    except OSError as err:
        raise InputError(f"--metadata {args.metadata}: not readable ({' '.join(str(err).split())})") from None


def read_input(args):
    """The input table, read whole or part by part (:func:`~ektelo_pgm.table_io.open_table`), and whether
    it has a header line (Parquet: always; a CSV: as the user says, never guessed)."""
    from .table_io import open_table

    header = True if args.header else False if args.no_header or args.names else None
    return (open_table(args.input, header, args.names, args.sep, args.encoding, args.engine, args.max_memory,
                       args.quoted_newlines), header is not False)


def fitted(args, frame, drawn: bool, **options):
    """A Synthesizer fitted to ``frame`` as the arguments say (``options``: more of its parameters),
    its notes printed; ``drawn``: whether records will be drawn from it (the notes say which blanks
    are not)."""
    from .synthesizer import Synthesizer

    synth = Synthesizer(args.mechanism, epsilon=args.epsilon, delta=args.delta, schema_share=args.schema_share,
                        seed=args.seed, drop=args.drop, kinds=kinds(args), other=args.other_label,
                        regenerate=args.regenerate, public=args.public_categories, metadata=args.metadata,
                        person=args.person, max_rows=args.max_rows_per_person, **options)  # no --seed: secure noise
    synth.fit(frame, schema=args.declared, cache=args.cache)
    notes(args, synth.left_out, synth.encoder, synth.thresholds, synth.blank_records, synth.blankless if drawn else ())
    return synth


def notes(args, left_out: dict, encoder, thresholds: dict, blank: float = 0.0, blankless: tuple = ()) -> None:
    """One line on the ``blank`` records blank in every column (:func:`~ektelo_pgm.schema.blank_records`), one per
    reason columns were left out for (:func:`~ektelo_pgm.schema.left_out_reasons`), per column whose categories were declared public, and per other column of
    the schema: what the schema does to its values (:func:`~ektelo_pgm.schema.column_changes`; ``blankless``:
    the columns whose blanks are drawn nowhere)."""
    if blank:  # a CSV read line by line: records holding line breaks?
        say(args, "note: " + blank_records(blank, not (args.quoted_newlines or is_parquet(table_files(args.input)[0]))))
    for why in left_out_reasons(left_out):
        say(args, f"note: left out {why}")
    fixed = kinds(args)
    for column in encoder.columns.values():
        if getattr(column, "public", False):
            say(args, f"note: the {len(column.categories)} categories of column {column.name!r} were read as they "
                      "are, declared public (--public-categories): not a private release")
        else:
            say(args, f"note: column {column.name!r}: " + "; ".join(column_changes(column, thresholds.get(column.name),
                                                                                  column.name in fixed,
                                                                                  column.name in blankless)))


def kinds(args) -> dict:
    """``{column: kind}`` from --categorical and --numeric."""
    both = sorted(set(args.categorical) & set(args.numeric))
    if both:
        raise InputError(f"columns {both} are given both --categorical and --numeric")
    return {**{c: "categorical" for c in args.categorical}, **{c: "numeric" for c in args.numeric}}


def say(args, message: str) -> None:
    if not args.quiet:
        print(f"ektelo-pgm: {message}", file=sys.stderr)


def synth(args) -> None:
    check_output(args, TABLE_FORMATS)
    args.declared, args.metadata = declared_schema(args), metadata(args)
    frame, header = read_input(args)
    model = fitted(args, frame, True, sampling=args.sampling)
    rows = model.write(args.output, args.rows, header)
    if args.save:
        model.save(args.save)
    say(args, f"wrote {rows} rows x {len(model.order)} columns to {args.output} ({model.settings()})")


def answer(args) -> None:
    check_output(args, (".csv", ".json"))
    args.declared, args.metadata = declared_schema(args), metadata(args)
    frame, _ = read_input(args)
    model = fitted(args, frame, False)
    k = args.k or min(ANSWER_K, len(model.encoder.columns))
    if args.k is None and k < ANSWER_K:
        say(args, f"note: the schema kept one column (its notes say why the others were left out): its 1-way "
                  f"marginal is answered, not the {ANSWER_K}-way ones of the default --k")
    table = model.answer(k, args.level)
    write_table(table, args.output)
    say(args, f"wrote {len(table)} cells of the {k}-way marginals with {args.level:g} intervals to "
              f"{args.output} ({args.mechanism}, {model.guarantee()})")


def schema(args) -> None:
    from numpy.random import default_rng
    from .files import private_folder
    from .privacy.contribution import bound_rows, person_relation, rows_histogram
    from .schema import learn

    check_output(args, (".json",))
    known, (raw, _) = metadata(args), read_input(args)  # the metadata file read first
    person, rng = person_relation(args.person, args.max_rows_per_person), default_rng(args.seed)
    with private_folder() as folder:  # a table read part by part, grouped by person
        frame = raw if person is None else bound_rows(raw, args.person, person.max_rows, rng, args.seed is None, folder)
        unknown = [c for c in args.drop if c not in frame.columns]
        if unknown:
            raise InputError(f"columns {unknown} are not in the table {list(frame.columns)}")
        unknown = [c for c in args.public_categories if c not in frame.columns or c in args.drop]
        if unknown:
            raise InputError(f"columns {unknown} given --public-categories are not in the table or are dropped")
        fixed, public, left_out, thresholds = kinds(args), args.public_categories, {}, {}
        if known is not None:
            known = known.without([*args.drop, *([args.person] if person else [])])
            known.check(frame.columns)
            fixed, public, ids = known.joined(fixed, public)
            left_out = {**known.left_out, **{c: f"column {c!r}: an id in {known.source}, written afresh by synth"
                                             for c in ids}}
        kept = frame[[c for c in frame.columns if c not in {*args.drop, *left_out}]]
        budget = Budget.approx(args.epsilon, args.delta / 2, person or ADD_REMOVE, secure=args.seed is None)
        if args.rows_per_person_histogram:  # every row of each person, read before any was left out
            say(args, rows_histogram(raw, args.person, budget, rng, args.rows_per_person_histogram))
        encoder = learn(kept, budget, None, args.delta / 2, rng, args.bins, known and known.declared, public,
                        kinds=fixed, other=args.other_label, left_out=left_out, thresholds=thresholds, folder=folder)
    notes(args, left_out, encoder, thresholds)
    encoder.save(args.output)
    say(args, f"wrote the schema of {len(encoder.columns)} columns to {args.output} "
              f"(({args.epsilon:g}, {args.delta:g})-DP{'' if person is None else f', {person}'})")


def read_compared(path: str, args):
    """A table given to ``evaluate``: a CSV's header line detected, ``--names`` naming the columns of one without."""
    from .table_io import has_header, read_table

    if is_parquet(path) or not os.path.isfile(path):
        return read_table(path)
    header = not args.no_header and has_header(path)
    names = None if header or not args.names else args.names.split(",")
    return read_table(path, header=header, names=names, quoted_newlines=args.quoted_newlines)


def check_compared(paths: list[str], args) -> None:
    """Refuse, before any is read, tables for ``evaluate`` (which reads them whole) that would take more
    than --max-memory together (:func:`~ektelo_pgm.table_io.decoded_bytes`), naming their size in MB."""
    from .memory import memory_cap
    from .table_io import decoded_bytes

    cap, need = memory_cap(args.max_memory), sum(decoded_bytes(table_files(p)) for p in paths)
    if need > cap:
        raise InputError(f"evaluate reads its tables whole: {', '.join(paths)} would take about {need / 2**20:,.0f} "
                         f"MB, more than --max-memory {cap / 2**20:,.0f} MB; evaluate a sample of their rows, or "
                         "raise --max-memory")


def evaluate(args) -> None:
    from .evaluation import evaluate as evaluate_tables

    check_compared([p for p in (args.real, args.synthetic, args.holdout) if p is not None], args)
    real, synthetic = read_compared(args.real, args), read_compared(args.synthetic, args)
    orders = (1, 2, 3) if args.three_way else (1, 2)
    holdout = None if args.holdout is None else read_compared(args.holdout, args)
    evaluation = evaluate_tables(real, synthetic, args.schema, orders, args.bins, args.output, args.png, args.model,
                                 holdout, args.target)
    print(evaluation.text())
    for written in filter(None, (args.output, args.png and f"{args.png.removesuffix('.png')}-*.png")):
        print(f"wrote {written}")


def compare(args) -> None:
    from .plans import table
    from .plans.plan import Comparison
    from .evaluation import compare as compare_operators

    operators = chosen_operators(args.reconstruct)
    data = load_data(args)
    rows = compare_operators(data, args.epsilons, operators, args.k, args.trials, args.seed, args.output)
    for budget, group in rows.groupby("epsilon"):
        print(f"epsilon {budget:g}:")
        print(table([Comparison(r.operator, None if r.refused else r.error, r.seconds, refused=r.refused)
                     for r in group.itertuples()]))
    print(f"wrote {args.output}")


def example(args) -> None:
    if args.output.lower().endswith((*PARQUET, ".json")):
        raise InputError("--output: the example is written as distributed, comma-separated text: name a .csv file")
    sample_data.write_example(args.name, args.output)
    if not args.quiet:
        print(f"wrote {args.output}: {sample_data.EXAMPLES[args.name][1]}, no header line; its columns "
              f"(--names): {','.join(sample_data.ADULT_COLUMNS)}")


def data_options(p) -> None:
    """The options naming the data of ``run`` and ``compare``."""
    p.add_argument("--data", default="builtin",
                   help="'builtin' (the package's synthetic census), the name of a shipped dataset "
                        "(adult, titanic, nltcs, salary) or an integer-coded CSV path")
    p.add_argument("--domain", help="domain JSON ({attribute: size}) for a CSV path")
    p.add_argument("--data-dir", help="folder of integer-coded datasets (NAME.csv or NAME.csv.xz beside "
                   "NAME-domain.json; default: those shipped with the package)")
    p.add_argument("--attrs", type=lambda s: tuple(s.split(",")),
                   help=f"comma-separated attributes to keep (built-in default: {','.join(BUILTIN_ATTRS)})")
    p.add_argument("--records", type=count, default=10_000, help="records of the built-in data")
    p.add_argument("--k", type=count, default=2, help="marginal order of the workload")
    p.add_argument("--seed", type=seed, default=0)


def table_arguments(p, mechanism: bool = True) -> None:
    """The arguments shared by synth, answer and schema."""
    from .schema import OTHER
    from .synthesizer import SCHEMA_SHARE, mechanisms
    from .table_io import ENGINES

    p.add_argument("input", help="CSV or Parquet file (.parquet, .pq), or a folder or glob of them")
    p.add_argument("-o", "--output", type=path, required=True, help="output file (never inside the input folder, "
                   "nor matched by the input glob)")
    p.add_argument("--epsilon", type=epsilon, required=True,
                   help=f"privacy budget epsilon (> 0, at most {MAX_EPSILON:g})")
    p.add_argument("--delta", type=fraction, default=1e-9, help="privacy parameter delta (in (0, 1), default 1e-9)")
    header = p.add_mutually_exclusive_group()
    header.add_argument("--header", action="store_true", help="the CSV's first line names its columns")
    header.add_argument("--no-header", action="store_true", help="the CSV has no header line (columns column_1, ...)")
    header.add_argument("--names", type=column_names, help="comma-separated column names of a CSV without a header "
                        "line")
    p.add_argument("--sep", type=separator, help="the CSV's field separator, one character (\\t: a tab; default: a "
                   "tab for .tsv and .tab files, else a comma)")
    p.add_argument("--encoding", type=text_encoding, default="utf-8", help="the CSV's text encoding (default utf-8; "
                   "e.g. latin-1); bytes invalid in it are replaced, never an error")
    columns = lambda text: [c for c in text.split(",") if c]  # noqa: E731
    p.add_argument("--drop", type=columns, default=[], help="comma-separated columns to leave out")
    p.add_argument("--categorical", type=columns, default=[],
                   help="comma-separated columns whose inferred kind is categorical (e.g. a numeric code)")
    p.add_argument("--numeric", type=columns, default=[], help="comma-separated columns whose inferred kind is "
                   "numeric, binned")
    p.add_argument("--public-categories", type=columns, default=[],
                   help="comma-separated columns whose categories are public knowledge (the cities of a state, the "
                        "codes of a codebook): read from the table as they are, without noise, and marked public "
                        "(an assumption you vouch for, not a private release); each gets a missing code whether or "
                        "not a value is blank, since that is not public, drawn only where the mechanism's noisy "
                        "counts show blanks (never blank: --schema with \"public\": true, \"missing\": false)")
    p.add_argument("--other-label", default=OTHER, help=f"the value written for categories too rare to release "
                   f"(default {OTHER!r}; missing values stay missing)")
    p.add_argument("--seed", type=seed, help="seed of every random step (same seed, same output; keep it as secret "
                   "as the data); without it the noise comes from the operating system's secure generator")
    p.add_argument("--person", help="column naming each row's person: the guarantee then holds per person (at most "
                   "--max-rows-per-person rows each, the others left out at random before anything reads the table); "
                   "the column is left out (--regenerate writes it afresh)")
    p.add_argument("--max-rows-per-person", type=count, help="most rows of one person kept (with --person); choose "
                   "it without looking at the data (docs/privacy.md)")
    p.add_argument("--quiet", action="store_true", help="print nothing but errors")
    declared = p.add_mutually_exclusive_group()
    declared.add_argument("--metadata", type=path, help="SDV's metadata of the table (JSON: sdtypes, with optional "
                          "\"values\", \"bounds\", \"bins\", \"public\", \"missing\"); free where it declares (bounds "
                          "without \"bins\": bins placed privately), ids written afresh, personal sdtypes left out")
    p.add_argument("--engine", choices=ENGINES, default="auto",
                   help="memory: read the table whole, whatever --max-memory; parts: read it part by part, in parts "
                        "sized to --max-memory; auto (default): parts for a folder, a glob, or a table that read "
                        "whole would take more than --max-memory (from a Parquet file's metadata, a CSV's size). "
                        "The output is the same either way; a note on a terminal says when it reads part by part")
    max_memory_argument(p)
    quoted_newlines_argument(p)
    if mechanism:
        p.add_argument("--cache", type=path, help="folder in which a table read part by part has its integer codes "
                       "written (default: the system's temporary folder; never the input folder, inside it or "
                       "holding an input file).  The codes are as private as the table: they go to a new folder "
                       "only you can open (0700, files 0600), removed at the end however the run ends (an error, "
                       "Ctrl-C, SIGTERM, SIGHUP)")
        p.add_argument("--mechanism", type=mechanism_name, default="aim",
                       help=f"one of {', '.join(sorted(mechanisms()))} (default aim)")
        declared.add_argument("--schema", type=path, help="declared schema (JSON) of some or all columns; nothing is "
                              "spent on the columns it fixes, the others are inferred privately (not with --metadata)")
        p.add_argument("--regenerate", type=columns, default=[], help="comma-separated identifier columns "
                       "left out of the model and written afresh (1, 2, ..., n)")
        p.add_argument("--schema-share", type=share, default=SCHEMA_SHARE,
                       help=f"share of the budget that infers the schema without --schema, in (0, 1), or auto "
                            f"(default {SCHEMA_SHARE}: what its columns need for the table's noisy number of rows)")


def parser() -> argparse.ArgumentParser:
    """The command line's parser."""
    from .schema import BINS

    top = Parser(prog="ektelo-pgm", description=__doc__, epilog=EXIT_CODES,
                 formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = top.add_subparsers(dest="command", required=True)
    p = commands.add_parser("run", help="measure all k-way marginals with the Laplace mechanism and "
                            "print each reconstruction's workload error (McKenna et al. 2019, sec. 5.1)")
    data_options(p)
    p.add_argument("--epsilon", type=epsilon, default=1.0, help="pure-DP budget")
    p.add_argument("--reconstruct", nargs="+", default=["least-squares"],
                   help="reconstruction operators compared on the same measurements")
    p.set_defaults(handler=run)

    raw = argparse.RawDescriptionHelpFormatter
    p = commands.add_parser("synth", help="private synthetic records from a raw CSV or Parquet table",
                            description=SYNTH_HELP, formatter_class=raw)
    table_arguments(p)
    p.add_argument("--rows", type=count, help="number of synthetic rows (default: the private estimate "
                   "of the input's)")
    p.add_argument("--sampling", choices=SAMPLING, default="round",
                   help="round: conditional counts rounded from the model's expectations (default, less "
                        "sampling error); sample: i.i.d. records")
    p.add_argument("--save", type=path, help="also save the fitted synthesizer (.npz) to sample more later")
    p.set_defaults(handler=synth)

    p = commands.add_parser("answer", help="private counts of all k-way marginals of a raw table",
                            description=ANSWER_HELP, formatter_class=raw)
    table_arguments(p)
    p.add_argument("--k", type=count, help=f"marginal order (default {ANSWER_K}, or 1 where the schema keeps one "
                   "column)")
    p.add_argument("--level", type=fraction, default=LEVEL, help=f"confidence level of the intervals (default {LEVEL})")
    p.set_defaults(handler=answer)

    p = commands.add_parser("schema", help="a raw table's schema inferred privately, as JSON to edit",
                            description=SCHEMA_HELP, formatter_class=raw)
    table_arguments(p, mechanism=False)
    p.add_argument("--bins", type=bins, default=BINS, help=f"most bins of a numeric column (default {BINS}, at most "
                   f"{MAX_BINS:,})")
    p.add_argument("--rows-per-person-histogram", type=path, help="with --person: a noisy histogram of rows per person")
    p.set_defaults(handler=schema)

    p = commands.add_parser("evaluate", help="compare a synthetic table with the real one: error table and "
                            "HTML/PNG report", description=EVALUATE_HELP, formatter_class=raw)
    p.add_argument("real", help="the real table (CSV, header line detected, or Parquet)")
    p.add_argument("synthetic", help="the synthetic table, with the real table's columns")
    p.add_argument("-o", "--output", help="HTML report to write (needs matplotlib)")
    p.add_argument("--png", help="write the figures as PNG files PNG-errors.png, PNG-oneway.png, ... "
                   "(a trailing .png is dropped; needs matplotlib)")
    header = p.add_mutually_exclusive_group()
    header.add_argument("--no-header", action="store_true", help="the CSVs have no header line")
    header.add_argument("--names", help="comma-separated column names of a CSV without a header line")
    p.add_argument("--schema", help="JSON file fixing which columns are numeric: a schema of 'ektelo-pgm "
                   "schema' or {column: 'numeric' | 'categorical'} (default: numeric when every value is a "
                   "number and there are more than --bins distinct ones, or nearly every one a date or time)")
    p.add_argument("--model", help="the synthesizer saved by 'ektelo-pgm synth --save': its settings and ledger "
                                   "head the report, and its schema explains what to do about columns far from the "
                                   "real ones")
    p.add_argument("--bins", type=count, default=16, help="quantile bins per numeric column (default 16)")
    p.add_argument("--three-way", action="store_true", help="also every 3-way marginal")
    p.add_argument("--holdout", help="real rows the synthesizer never saw (same columns; REAL is then the part it "
                   "was fitted on): privacy sanity checks against them, and machine-learning efficacy with --target")
    p.add_argument("--target", help="a column to predict: models trained on the synthetic table and on REAL, both "
                   "tested on --holdout (needs scikit-learn: the 'ml' extra)")
    max_memory_argument(p)
    quoted_newlines_argument(p)
    p.set_defaults(handler=evaluate)

    p = commands.add_parser("compare", help="plot each reconstruction's workload error against epsilon, on "
                            "shared measurements", description=COMPARE_HELP, formatter_class=raw)
    data_options(p)
    p.add_argument("--epsilons", type=epsilon, nargs="+", default=[0.1, 0.3, 1.0, 3.0, 10.0],
                   help="pure-DP budgets (default 0.1 0.3 1 3 10)")
    p.add_argument("--reconstruct", nargs="+", default=["least-squares", "mw", "pgm"],
                   help="reconstruction operators to compare (default least-squares mw pgm)")
    p.add_argument("--trials", type=count, default=1, help="measurements per epsilon (the plot shows their mean)")
    p.add_argument("-o", "--output", required=True, help="the figure: a .png, or an .html page with the table")
    p.set_defaults(handler=compare)

    p = commands.add_parser("example", help="write a raw example table (UCI Adult) to try synth, answer, schema "
                            "and evaluate on", description=EXAMPLE_HELP, formatter_class=raw)
    p.add_argument("name", choices=sample_data.EXAMPLES, help="adult (the training file) or adult-test")
    p.add_argument("-o", "--output", required=True, help="the CSV file to write")
    p.add_argument("--quiet", action="store_true", help="print nothing but errors")
    p.set_defaults(handler=example)
    return top


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    received = []
    try:
        with stopped_by_signals(received), \
                progress.reporting(False if getattr(args, "quiet", False) else None):  # bars on a terminal
            args.handler(args)
    except BaseException as err:
        if isinstance(err, KeyboardInterrupt) or received:  # or what the signal interrupted raised
            signum = received[0] if received else signal.SIGINT
            stopped = "interrupted" if signum == signal.SIGINT else f"stopped by {signal.Signals(signum).name}"
            print(f"ektelo-pgm: {stopped}", file=sys.stderr)
            return 128 + signum
        if isinstance(err, (ExpectedError, OSError, ImportError)):  # bad input, a refusal, a file, an extra
            print(f"ektelo-pgm: error: {' '.join(str(err).split())}", file=sys.stderr)
            return 1
        raise
    return 0


if __name__ == "__main__":
    sys.exit(main())
