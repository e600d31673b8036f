"""The command line's help texts: what each command does, with examples and the exit codes."""
from . import sample_data

EXIT_CODES = """exit codes: 0 success; 1 bad input or data (one line: ektelo-pgm: error: ...,
naming the column or size, never a value of the table; no output file is written); 2 bad usage (one
line naming the option); 130 interrupted (Ctrl-C), 143 terminated (SIGTERM), 129 hung up (SIGHUP):
temporary files are removed and no output file is written."""

SYNTH_HELP = """Reads a CSV (say --header when its first line names the columns, --no-header or
--names when it does not: this is never guessed from the data) or Parquet table of strings and
numbers, fits a differentially private mechanism and writes synthetic records with the same
columns, in the value types the schema fixes, CSV or Parquet by OUTPUT's extension.

Without --schema the schema (which columns are categorical or numeric, the categories, the
ranges and bins of numbers) is inferred privately from the data, spending --schema-share of the
budget: reading categories or ranges off the data without noise would leak them.  Categories
held by too few records to survive the noise, and numbers beyond the private range, are then
encoded as missing or clipped.  With --schema FILE (written by 'ektelo-pgm schema' and edited,
or by hand) nothing is spent on the schema and it is released as declared; so with --metadata
FILE (SDV's metadata) on what it declares (bounds without bins: bins placed privately).

Records are drawn from the fitted model with --sampling round (default: the counts of each of
its conditional tables are roundings of their expected counts, values assigned to records at
random, so less sampling error) or --sampling sample (i.i.d. records); both are free of budget.

examples:
  ektelo-pgm synth adult.data --no-header -o synthetic.csv --epsilon 1
  ektelo-pgm synth people.parquet -o synthetic.parquet --epsilon 0.5 --mechanism mst --rows 1000
  ektelo-pgm schema people.csv --header -o schema.json --epsilon 0.1   # then edit schema.json
  ektelo-pgm synth people.csv --header -o synthetic.csv --epsilon 1 --schema schema.json

""" + EXIT_CODES

ANSWER_HELP = """Fits a mechanism as 'synth' does and writes its estimated counts of every k-way
marginal of the columns, with error bars, to CSV or JSON by OUTPUT's extension: one row per
cell with marginal, cell, count, std_error, lower, upper, basis and model_count.  lower and
upper bound the cell's true count at --level (0.95 by default) against the mechanism's
randomness (not the sampling of the table from a population), around count: exact from the
noise where a measurement holds the marginal (basis 'measured', count its estimate, with its
standard error), else from AIM's bound on its model's error (basis 'model bound'); 'none'
where nothing bounds the cell.  model_count is the model's estimate, consistent across
marginals.

examples:
  ektelo-pgm answer adult.data --no-header -o marginals.csv --epsilon 1 --k 2
  ektelo-pgm answer people.csv --header -o marginals.json --epsilon 1 --mechanism mst --schema schema.json

""" + EXIT_CODES

SCHEMA_HELP = """Infers a table's schema privately (spending all of --epsilon and --delta) and writes
it as JSON: every column's kind, categories or bin edges.  Edit it (add categories known in
public, widen ranges), then give it to 'synth' or 'answer' with --schema, which then spend
nothing on the schema.  The two runs' budgets add up.

examples:
  ektelo-pgm schema adult.data --no-header -o schema.json --epsilon 0.2

""" + EXIT_CODES

EVALUATE_HELP = """How close the synthetic table is to the real one.  Opens with a summary: the
release (with --model: mechanism, epsilon, delta, ledger), SDMetrics's scores (column shapes,
column pair trends) beside those of a reference, the real table with its columns shuffled apart
(seeded), the worst columns and pairs.  Then the total variation distance (TVD) on every 1-way
and 2-way marginal (3-way with --three-way), both tables cut the same way: numeric columns and
columns of dates or times at the real table's quantiles, categorical ones by value; for each
column far from the real one, the cause its synthetic values show (its model's schema first,
with --model).  With --holdout (real rows the synthesizer never saw): privacy sanity checks
(exact matches, distance to the closest record, each against the holdout's own), and with
--target the machine-learning efficacy.  -o writes an HTML report (figures embedded), --png the
figures as PNG files.  Not private: the report shows the real table's marginals.

examples:
  ektelo-pgm evaluate adult.data synthetic.csv -o report.html
  ektelo-pgm evaluate train.csv synthetic.csv --holdout holdout.csv --target income -o report.html
  ektelo-pgm evaluate real.parquet synthetic.parquet --png figures/adult --three-way

""" + EXIT_CODES

COMPARE_HELP = """For each epsilon, all k-way marginals are measured once with the Laplace mechanism
and every reconstruction runs on those same measurements; writes the workload error (McKenna et
al. 2019, sec. 5.1) against epsilon to a PNG (or an HTML page with the table).

example:
  ektelo-pgm compare --data adult --attrs age,education,income,sex --epsilons 0.1 1 10 \\
      --reconstruct least-squares mw pgm -o compare.png

""" + EXIT_CODES

EXAMPLE_HELP = """Writes UCI Adult, shipped with the package, as it is distributed: comma-separated
text with categories and raw numbers, no header line, missing values written '?'.  'adult' is the
training file (32,561 records), 'adult-test' the test file (a first line '|1x3 Cross validator', then
16,281 records whose incomes end in a full stop).

examples:
  ektelo-pgm example adult -o adult.csv
  ektelo-pgm synth adult.csv --names """ + ",".join(sample_data.ADULT_COLUMNS) + """ -o synthetic.csv --epsilon 1
"""
