"""Draw the cost model's accuracy on the published measurements: accuracy.png.

  /usr/bin/python3 plot.py        (needs matplotlib: Debian's python3-matplotlib)

One panel per preset: for each published point, the criterion's ratio (predicted / measured
busbw from 1 MiB, predicted / measured time below) against the size, by op, with the tolerance
band (+-20 % from 1 MiB, +-35 % below) and the 2x limits. Hollow markers are the rows the fitted
figures saw; filled ones are held out.
"""
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check  # noqa: E402

COLORS = {"all_reduce": "tab:blue", "all_gather": "tab:orange", "reduce_scatter": "tab:green",
          "all_to_all": "tab:red", "broadcast": "tab:purple"}


def main():
    rows = check.load()
    check.run(rows)
    fig, axes = plt.subplots(1, 2, figsize=(13, 5), sharey=True)
    for ax, system in zip(axes, ("h100-nvlink-ib", "a100-nvlink-ib")):
        mine = [r for r in rows if r["system"] == system]
        for op, color in COLORS.items():
            for role, face in (("fit", "none"), ("held_out", color)):
                sub = [r for r in mine if r["op"] == op and r["role"] == role]
                if sub:
                    ax.scatter([r["bytes"] for r in sub], [r["ratio"] for r in sub], s=18,
                               edgecolors=color, facecolors=face, label=f"{op} ({role})")
        mib = 1 << 20
        ax.fill_between([1, mib], 0.65, 1.35, color="0.9", zorder=0)
        ax.fill_between([mib, 1 << 34], 0.8, 1.2, color="0.9", zorder=0)
        for y in (0.5, 2.0):
            ax.axhline(y, color="0.5", linestyle="--", linewidth=0.8)
        ax.axhline(1.0, color="0.3", linewidth=0.8)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlim(4, 1 << 34)
        ax.set_ylim(0.2, 8)
        ax.set_title(f"{system}: predicted / measured")
        ax.set_xlabel("size (bytes, nccl-tests' count)")
        ax.legend(fontsize=7, loc="upper right")
    axes[0].set_ylabel("busbw ratio from 1 MiB, time ratio below")
    fig.tight_layout()
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "accuracy.png")
    fig.savefig(out, dpi=110)
    print(out)


if __name__ == "__main__":
    main()
