#!/usr/bin/env python3
"""Plots and a markdown summary from ranks-bench JSON lines (run by `ranks report`).

usage: plot_bench.py RESULTS.jsonl OUT_DIR [--title TITLE]

For each op: one figure with latency vs size and busbw vs size (log axes); every
(backend, world size) is a colour, measured solid, the cost model's prediction (the
"predicted_us" that `ranks report --model` adds) dashed, simulated runs (backend "sim") dotted.
summary.md holds the tables, the pictures and the model error table (sizes >= 4 KiB).
"""

import argparse
import collections
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402

ERROR_FROM_BYTES = 4096
TARGET_ERROR = 0.15
BUSBW_FACTOR = {  # nccl-tests doc/PERFORMANCE.md
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "all_to_all": lambda n: (n - 1) / n,
}


def busbw(op, n, size, time_us):
    if time_us <= 0:
        return float("nan")
    return size / (time_us * 1e-6) / 1e9 * BUSBW_FACTOR.get(op, lambda n: 1.0)(n)


def human(size):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:g} {unit}" if size == int(size) else f"{size:.1f} {unit}"
        size /= 1024
    return str(size)


def series_label(row):
    if row["backend"] == "sim":
        return f"sim ({row.get('sim_backend', '?')}, {row.get('model', 'free')}) n={row['world_size']}"
    return f"{row['backend']} n={row['world_size']}"


def load(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


# Row fields that make another series when they differ between rows of one label (the same
# world size on one node and on four, or float32 beside bfloat16): named in the label only then,
# so a plain sweep keeps its short labels.
DISTINGUISHING = (
    ("ranks_per_node", lambda v: f"{v}/node"),
    ("dtype", str),
    ("redop", str),
    ("in_place", lambda v: "in place" if v else "out of place"),
)


def group(rows):
    """{op: {label: {size: row}}}, keeping the last row per size (a re-run replaces)."""
    varying = collections.defaultdict(set)  # (op, base label) -> fields with several values
    seen = collections.defaultdict(dict)
    for row in rows:
        key = (row["op"], series_label(row))
        for field, _ in DISTINGUISHING:
            value = row.get(field)
            if field in seen[key] and seen[key][field] != value:
                varying[key].add(field)
            seen[key].setdefault(field, value)
    ops = collections.OrderedDict()
    for row in rows:
        key = (row["op"], series_label(row))
        parts = [show(row.get(field)) for field, show in DISTINGUISHING if field in varying[key]]
        label = key[1] + (f" ({', '.join(parts)})" if parts else "")
        ops.setdefault(row["op"], collections.OrderedDict()).setdefault(label, {})[
            row["bytes"]
        ] = row
    return ops


def plot_op(op, series, out_dir):
    fig, (lat, bw) = plt.subplots(1, 2, figsize=(11, 4.2), constrained_layout=True)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for k, (label, by_size) in enumerate(series.items()):
        colour = colours[k % len(colours)]
        sizes = sorted(by_size)
        rows = [by_size[s] for s in sizes]
        n = rows[0]["world_size"]
        style = ":" if rows[0]["backend"] == "sim" else "-"
        times = [r["time_us"] for r in rows]
        lat.plot(sizes, times, style, marker="o", ms=3, color=colour, label=label)
        bw.plot(sizes, [busbw(op, n, s, t) for s, t in zip(sizes, times)], style, marker="o",
                ms=3, color=colour, label=label)
        predicted = [(s, r["predicted_us"]) for s, r in zip(sizes, rows) if "predicted_us" in r]
        if predicted:
            ps, pt = zip(*predicted)
            lat.plot(ps, pt, "--", color=colour, alpha=0.8, label=f"{label} predicted")
            bw.plot(ps, [busbw(op, n, s, t) for s, t in zip(ps, pt)], "--", color=colour,
                    alpha=0.8, label=f"{label} predicted")
    size_ticks = matplotlib.ticker.FuncFormatter(lambda x, _: human(x).replace(".0 ", " "))
    for ax, ylabel in ((lat, "time per op (µs)"), (bw, "busbw (GB/s)")):
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_locator(matplotlib.ticker.LogLocator(base=4))
        ax.xaxis.set_major_formatter(size_ticks)
        ax.set_yscale("log")
        plain = matplotlib.ticker.FuncFormatter(lambda y, _: f"{y:g}")
        ax.yaxis.set_major_formatter(plain)
        low, high = ax.get_ylim()
        # Label minor ticks only when the axis spans less than a decade (else they crowd).
        ax.yaxis.set_minor_formatter(plain if high < 10 * low else matplotlib.ticker.NullFormatter())
        ax.set_xlabel("size (bytes, nccl-tests convention)")
        ax.set_ylabel(ylabel)
        ax.grid(True, which="both", alpha=0.3)
    lat.set_title(f"{op}: latency")
    bw.set_title(f"{op}: bus bandwidth")
    lat.legend(fontsize=7)
    name = f"{op}.png"
    fig.savefig(os.path.join(out_dir, name), dpi=110)
    plt.close(fig)
    return name


def error_rows(ops):
    """(op, label, n, worst, mean, count) over sizes >= 4 KiB with a prediction."""
    out = []
    for op, series in ops.items():
        for label, by_size in series.items():
            errs = [abs(r["predicted_us"] - r["time_us"]) / r["time_us"]
                    for s, r in by_size.items()
                    if s >= ERROR_FROM_BYTES and "predicted_us" in r and r["time_us"] > 0]
            if errs:
                out.append((op, label, max(errs), sum(errs) / len(errs), len(errs)))
    return out


def summary(rows, ops, pictures, title):
    first = rows[0] if rows else {}
    hosts = sorted({r.get("host", "?") for r in rows})
    dates = sorted({r.get("date", "?")[:10] for r in rows})
    gits = sorted({r.get("git", "?") for r in rows})
    lines = [f"# {title}", "",
             f"Measured on {', '.join(hosts)} ({', '.join(dates)}), ranks git {', '.join(gits)}. "
             "Time per op is the slowest rank's mean over a timed block, the fastest block "
             "(ranks-bench -R) and run; algbw = size / time, busbw = algbw × "
             "the nccl-tests factor; GB = 1e9 B. Generated by `ranks report` from "
             f"{len(rows)} rows.", ""]
    errs = error_rows(ops)
    if errs:
        worst = max(e[2] for e in errs)
        lines += ["## Model error (sizes ≥ 4 KiB)", "",
                  f"Predicted vs measured, |predicted − measured| / measured; target "
                  f"{TARGET_ERROR:.0%}. Worst overall: {worst:.1%}.", "",
                  "| op | series | sizes | worst | mean | within target |",
                  "| --- | --- | ---: | ---: | ---: | --- |"]
        for op, label, w, m, count in errs:
            lines.append(f"| {op} | {label} | {count} | {w:.1%} | {m:.1%} | "
                         f"{'yes' if w <= TARGET_ERROR else 'no'} |")
        lines.append("")
    for op, series in ops.items():
        lines += [f"## {op}", "", f"![{op}]({pictures[op]})", ""]
        labels = list(series)
        sizes = sorted({s for by_size in series.values() for s in by_size})
        header = "| size |" + "".join(
            f" {l} µs |" + (" predicted µs |" if any("predicted_us" in r for r in series[l].values()) else "")
            for l in labels)
        lines += [header, "| ---: |" + " ---: |" * (header.count("|") - 2)]
        for s in sizes:
            cells = [f"| {human(s)} |"]
            for l in labels:
                r = series[l].get(s)
                has_pred = any("predicted_us" in x for x in series[l].values())
                cells.append(f" {r['time_us']:.1f} |" if r else " |")
                if has_pred:
                    cells.append(f" {r['predicted_us']:.1f} |" if r and "predicted_us" in r else " |")
            lines.append("".join(cells))
        lines.append("")
    wrong = [r for r in rows if r.get("wrong", 0) not in (0, -1)]
    lines.append(f"Correctness: {len(wrong)} of {len(rows)} rows had #wrong > 0." if wrong
                 else f"Correctness: every checked row had #wrong = 0 ({len(rows)} rows).")
    return "\n".join(lines) + "\n"


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results")
    parser.add_argument("out_dir")
    parser.add_argument("--title", default="ranks bench report")
    args = parser.parse_args(argv)
    rows = load(args.results)
    if not rows:
        print("plot_bench.py: no rows", file=sys.stderr)
        return 1
    os.makedirs(args.out_dir, exist_ok=True)
    ops = group(rows)
    pictures = {op: plot_op(op, series, args.out_dir) for op, series in ops.items()}
    with open(os.path.join(args.out_dir, "summary.md"), "w", encoding="utf-8") as f:
        f.write(summary(rows, ops, pictures, args.title))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
