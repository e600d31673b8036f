"""Command line: ``ektelo-pgm run`` measures a marginal workload privately and reconstructs it."""
from __future__ import annotations

import argparse
import sys

from . import sample_data
from .dataset import Dataset
from .privacy import Budget

#: Attributes of the built-in census kept by default: 32,000 cells, small enough for every
#: full-vector reconstruction.
BUILTIN_ATTRS = ("age", "education", "hours", "income")
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


def load_data(args) -> Dataset:
    """The dataset the arguments name, restricted to ``--attrs`` when given."""
    if args.data == "builtin":
        data = sample_data.synthetic_bayes_net(args.records, rng=args.seed)
        attrs = args.attrs or BUILTIN_ATTRS
    elif args.data.endswith(".csv"):
        if not args.domain:
            raise ValueError(f"--data CSV needs --domain DOMAIN.json (the {{attribute: size}} file); {RAW_CSV}")
        try:
            data, attrs = Dataset.load(args.data, args.domain), args.attrs
        except ValueError as err:
            raise ValueError(f"{err}; {RAW_CSV}") from None
    else:
        data, attrs = sample_data.load(args.data, args.data_dir), args.attrs
    return data.project(attrs) if attrs else data


def run(args) -> None:
    from .operators import measure, select
    from .plans import compare, table
    from .workload import kway_marginals

    operators = reconstruction_operators()
    unknown = [name for name in args.reconstruct if name not in operators]
    if unknown:
        raise ValueError(f"unknown reconstruction {unknown}; choose from {sorted(operators)}")
    data = load_data(args)
    k = min(args.k, len(data.domain))
    workload = kway_marginals(data.domain, k)
    budget = Budget.pure(args.epsilon)
    queries = select.Workload(workload).select(data.domain)
    measurements = measure.Laplace().measure(data, queries, budget, rng=args.seed)
    print(f"data: {len(data)} records over {data.domain} ({data.domain.size():,} cells)")
    print(f"workload: all {len(workload.cliques)} {k}-way marginals, measured with Laplace noise; "
          f"epsilon spent {budget.spent:g} of {budget.total:g}")
    rows = compare(data.domain, measurements, {name: operators[name]() for name in args.reconstruct},
                   workload, data)
    print(table(rows))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="ektelo-pgm", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("run", help="measure all k-way marginals with the Laplace mechanism and "
                            "print each reconstruction's workload error (McKenna et al. 2019, sec. 5.1)")
    p.add_argument("--data", default="builtin",
                   help="'builtin' (the package's synthetic census), a shared dataset name "
                        "(adult, titanic, nltcs, salary) or an integer-coded CSV path")
    p.add_argument("--domain", help="domain JSON ({attribute: size}) for a CSV path")
    p.add_argument("--data-dir", help="directory of the shared datasets (default: $EKTELO_PGM_DATA "
                   "or ../shared/data)")
    p.add_argument("--attrs", type=lambda s: tuple(s.split(",")),
                   help=f"comma-separated attributes to keep (built-in default: {','.join(BUILTIN_ATTRS)})")
    p.add_argument("--records", type=int, default=10_000, help="records of the built-in data")
    p.add_argument("--k", type=int, default=2, help="marginal order of the workload")
    p.add_argument("--epsilon", type=float, default=1.0, help="pure-DP budget")
    p.add_argument("--reconstruct", nargs="+", default=["least-squares"],
                   help="reconstruction operators compared on the same measurements")
    p.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    try:
        run(args)
    except (ValueError, OSError, KeyError, MemoryError) as err:  # the user's input: one line, no traceback
        message = err.args[0] if isinstance(err, KeyError) and err.args else err
        print(f"ektelo-pgm: error: {message}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
