"""hgbt's two histogram engines side by side on the real-data suite.

    python benchmarks/histogram_layouts.py [--datasets flights,loans,...]
        [--threads 2] [--repeats 5] [--quantized] [--output FILE.md]

For each table of ``realdata.py`` (its cached training split and its "same"
settings: 100 rounds, 31 leaves, no early stopping) hgbt is fitted with
``histogram_layout='col_wise'``, ``'row_wise'`` and ``'auto'``, the three
taking turns in one process (after one untimed fit), ``--repeats`` times;
the table reports each one's best time, row-wise / column-wise, auto / the
better of the two, and what 'auto' chose in each repeat. The models are the
same bit for bit (checked here on the predictions of the training rows), so
only the time differs. Run it on an otherwise idle machine with
``OMP_NUM_THREADS`` set to ``--threads``.
"""
import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import realdata  # noqa: E402  (the suite's data and settings, next to this file)
from realdata_datasets import DATASETS  # noqa: E402

LAYOUTS = ("col_wise", "row_wise", "auto")


def load(name, cache_dir):
    """The cached training split of a realdata table (prepared if missing)."""
    import pandas as pd
    data = realdata._spawn(["--make-data", "--dataset", name, "--cache-dir", str(cache_dir)],
                           1, None, stderr_to_console=True)
    if "error" in data:
        raise SystemExit(f"{name}: data preparation failed: {data['error']}")
    data_dir = Path(data["data_dir"])
    meta = json.loads((data_dir / "meta.json").read_text())
    X = pd.read_pickle(data_dir / "X_train.pkl")
    y = np.load(data_dir / "y_train.npy")
    return meta["task"], X, y


def measure(name, args):
    import pandas as pd
    task, X, y = load(name, args.cache_dir)
    cat_cols = [c for c in X.columns if isinstance(X[c].dtype, pd.CategoricalDtype)]
    kwargs = realdata.estimator_kwargs("hgbt", "same", task, args.threads, cat_cols)
    kwargs["use_quantized_grad"] = args.quantized
    cls = realdata._import(realdata.estimator_class("hgbt", task))
    cls(**kwargs).fit(X, y)  # imports, first allocations
    seconds = {layout: [] for layout in LAYOUTS}
    chosen, outputs = [], {}
    for _ in range(args.repeats):
        for layout in LAYOUTS:
            model = cls(**kwargs, histogram_layout=layout)
            start = time.perf_counter()
            model.fit(X, y)
            seconds[layout].append(time.perf_counter() - start)
            if layout == "auto":
                chosen.append(model.histogram_layout_)
            outputs[layout] = model.predict(X.iloc[:5000])
    same = all(np.array_equal(outputs["col_wise"], out) for out in outputs.values())
    best = {layout: min(values) for layout, values in seconds.items()}
    row = dict(dataset=name, rows=X.shape[0], columns=X.shape[1], same_model=same,
               chosen=chosen, **{f"{k}_s": v for k, v in best.items()})
    row["row_over_col"] = best["row_wise"] / best["col_wise"]
    row["auto_over_best"] = best["auto"] / min(best["col_wise"], best["row_wise"])
    print(f"{name:16s} col {best['col_wise']:.4f} s  row {best['row_wise']:.4f} s  "
          f"auto {best['auto']:.4f} s  row/col {row['row_over_col']:.2f}  "
          f"auto/best {row['auto_over_best']:.2f}  chose {chosen}  same model {same}",
          flush=True)
    return row


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quantized", action="store_true")
    parser.add_argument("--cache-dir", default=str(HERE / ".cache"))
    parser.add_argument("--output", help="write the Markdown table here")
    args = parser.parse_args(argv)
    rows = [measure(name, args) for name in args.datasets.split(",") if name]
    lines = [f"`python benchmarks/histogram_layouts.py --threads {args.threads} --repeats "
             f"{args.repeats}{' --quantized' if args.quantized else ''}` on "
             f"{platform.processor() or platform.machine()}, best of {args.repeats} "
             "in-process fits each:", "",
             "| dataset | rows x columns | col_wise s | row_wise s | auto s | row / col | "
             "auto / better | auto chose | same model |",
             "|---|---|---:|---:|---:|---:|---:|---|---|"]
    for r in rows:
        choice = ", ".join(f"{r['chosen'].count(c)} {c}" for c in ("row_wise", "col_wise")
                           if c in r["chosen"])
        lines.append(f"| {r['dataset']} | {r['rows']:,} x {r['columns']} | "
                     f"{r['col_wise_s']:.3f} | {r['row_wise_s']:.3f} | {r['auto_s']:.3f} | "
                     f"{r['row_over_col']:.2f} | {r['auto_over_best']:.2f} | {choice} | "
                     f"{'yes' if r['same_model'] else 'NO'} |")
    ratios = np.array([r["row_over_col"] for r in rows])
    auto = np.array([r["auto_over_best"] for r in rows])
    lines += ["", f"Geometric means: row / col {np.exp(np.log(ratios).mean()):.2f}, "
              f"auto / the better {np.exp(np.log(auto).mean()):.2f}."]
    text = "\n".join(lines)
    print(text)
    if args.output:
        Path(args.output).write_text(text + "\n")


if __name__ == "__main__":
    main()
