"""A pure-Python model of NCCL's collective tuner, for the simulator's cost model.

It prices one nccl-tests call (all_reduce, all_gather, reduce_scatter, broadcast, all_to_all) the
way NCCL's tuner does: for every enabled (algorithm, protocol) it computes a latency and a bus
bandwidth from the topology, converts them to a time, and takes the cheapest (topoGetAlgoInfo).
The constants and formulas are NCCL's own (src/graph/tuning.cc, src/graph/search.cc,
src/enqueue.cc of NVIDIA/nccl at 5067397c, v2.30.7); MODEL.md lists each one with its source.
On top of NCCL's formulas the model adds what nccl-tests measures and NCCL's tuner leaves out:
a per-call launch overhead, a scale on NCCL's latency constants, and the per-step serialization
of one chunk (see `_pipeline_us`). all_to_all, which NCCL runs as n-1 point-to-point sends with no
tuner entry, is priced from NVLink within the node and the node's NICs between nodes.

Stdlib only. Entry point: predict(preset, op, nranks, nnodes, nbytes) -> (seconds, algo, proto).
"""

import math

OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all")
PROTOS = ("LL", "LL128", "Simple")

# ---------------------------------------------------------------------------------------------
# NCCL constants (tuning.cc ncclTunerConstantsDefaults, v2.30.7). Tuples are (LL, LL128, Simple).
# ---------------------------------------------------------------------------------------------
BASE_LAT_US = {  # baseLatencies
    "Tree": (6.8, 14.0, 8.4),
    "Ring": (6.6, 14.0, 8.4),
    "NVLS": (0.0, 0.0, 0.0),
    "NVLSTree": (0.0, 0.0, 0.0),
    "PAT": (8.0, 8.0, 8.0),
}
HW_LAT_US = {  # hwLatencies[link][algo]
    "nvlink": {"Tree": (0.6, 1.25, 4.0), "Ring": (0.6, 1.9, 3.4), "NVLS": (0.0, 0.0, 25.0),
               "NVLSTree": (0.0, 0.0, 25.0), "PAT": (0.0, 0.0, 4.0)},
    "net": {"Tree": (5.0, 8.5, 14.0), "Ring": (2.7, 4.0, 14.0), "NVLS": (0.0, 0.0, 18.0),
            "NVLSTree": (0.0, 0.0, 20.9), "PAT": (0.0, 0.0, 14.0)},
}
# Per-architecture rows; each tuple is indexed by min(nnodes, 3) - 1 (tuning.cc's index2).
ARCH = {
    "ampere": {  # sm80
        "ll_max_bw_1node": 87.7,                  # llMaxBws[Ampere][N1]
        "per_ch_ring_ll128": (20.0, 20.0, 20.0),  # perChMaxRingLL128Bws
        "per_ch_tree_ll128": (20.0, 20.0, 20.0),  # perChMaxTreeLL128Bws
        "per_ch_tree": (24.0, 23.6, 17.8),        # perChMaxTreeBws
        "per_ch_nvls_tree": (24.0, 23.6, 17.8),   # perChMaxNVLSTreeBws (unused: no NVLS)
        "nvls_efficiency": 0.0,                   # nvlsEfficiency[Ampere]
        "speeds_intra": (40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0),
        "speeds_inter": (48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0,
                         4.0, 3.0, 2.4, 1.2, 0.24, 0.12),  # search.cc speedArrayIntra/Inter
        "ring_simple_plateau": 1.4,               # ncclTopoGetAlgoTime: 1.4 from sm80 on
    },
    "hopper": {  # sm90
        "ll_max_bw_1node": 141.0,
        "per_ch_ring_ll128": (36.7, 36.7, 36.7),
        "per_ch_tree_ll128": (36.7, 36.7, 29.0),
        "per_ch_tree": (38.7, 41.4, 36.0),
        "per_ch_nvls_tree": (0.0, 57.7, 45.5),
        "nvls_efficiency": 0.85,
        "speeds_intra": (60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0),
        "speeds_inter": (48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0,
                         3.0, 2.4, 1.2, 0.24, 0.12),  # sm90SpeedArrayIntra/Inter
        "ring_simple_plateau": 1.4,
    },
}
# llMaxBws rows used between nodes (indexed by CPU vendor, not by GPU): Intel row 0, AMD row 1.
LL_MAX_BW_MULTINODE = {"intel": (39.0, 20.4), "amd": (22.5, 19.0)}  # (2 nodes, >= 3 nodes)
NET_OVERHEAD_US = {"intel": 1.0, "amd": 2.0}  # getNetOverhead; x3 for Simple
# treeCorrectionFactor[proto][log2(nBytes/64)], 64 B .. 256 MiB (tree all_reduce only)
TREE_CORRECTION = {
    "LL": (1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0,
           1.0, 1.0, 1.0, 1.0),
    "LL128": (1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9,
              .9, .9, 1.0, 1.0, 1.0),
    "Simple": (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7,
               .8, .9, .9, .9),
}
MAXCHANNELS = 64            # device.h
RING_MAX_CHANNELS = 32      # init.cc: ringGraph->maxChannels = MAXCHANNELS / 2
NVLS_MAX_ARITY = 32         # device.h NCCL_MAX_NVLS_ARITY

# ---------------------------------------------------------------------------------------------
# Presets: hardware as data, each figure with its source.
# ---------------------------------------------------------------------------------------------
# Free parameters: properties of NCCL's software as nccl-tests sees it, fitted by
# `check.py --fit` on the fit rows only, one set for every preset.
FITTED = {
    "launch_us": 0.0,           # per-call launch and host overhead on top of NCCL's latencies
    "lat_scale": 1.15,          # scale on NCCL's latency constants (base + per-hop)
    "fill_chunk_kib": 40.0,     # chunk serialized per step and channel, Ring/Tree/PAT
    "p2p_nvlink_eff": 0.90,     # all_to_all: share of the ring's NVLink bandwidth reached by p2p
    "p2p_net_eff": 0.94,        # all_to_all: share of the NIC rate reached by p2p
}

H100_NVLINK_IB = {
    "name": "h100-nvlink-ib",
    "arch": "hopper",           # H100 SXM, compute capability 9.0 -> tuning.cc Hopper rows
    "cpu": "intel",             # HGX/DGX H100 hosts: Xeon 8480C (Azure/AI-benchmarking-guide ND H100 v5)
    "gpus_per_node": 8,         # HGX H100 8-GPU board
    "nvlink_links": 18,         # NVLink4, 18 links per GPU (NVIDIA H100 datasheet; nccl#1264 "NV18")
    "nvlink_link_bw": 20.6,     # SM90_NVLINK_BW, GB/s per link as NCCL counts it (topo.h)
    "nvswitch": True,           # 4 NVSwitch gen3 on the board
    "nvls": True,               # NVLink SHARP: NCCL's default for one-node all_reduce (nccl-tests#212)
    "nics_per_node": 8,         # one ConnectX-7 per GPU (rails)
    "nic_gbps": 400,            # NDR InfiniBand; NCCL counts speed/8000 -> 50 GB/s per NIC
    "latency_inter_us": 0.0,    # graph->latencyInter, 0 for InfiniBand
    "collnet": False,           # no IB SHARP unless enabled (collnetEnable=0 by default)
    "nvls_fill_kib": 128.0,     # NCCL_NVLS_CHUNKSIZE default, 128 KiB (src/transport/nvls.cc)
    # fitted by check.py --fit on the fit rows of measured.csv (one set shared by all presets):
    **FITTED,
}

A100_NVLINK_IB = {
    "name": "a100-nvlink-ib",
    "arch": "ampere",           # A100 SXM4, compute capability 8.0 -> tuning.cc Ampere rows
    "cpu": "amd",               # DGX A100: 2x AMD EPYC 7742 (Azure ND A100 v4: EPYC 7V12)
    "gpus_per_node": 8,
    "nvlink_links": 12,         # NVLink3, 12 links per GPU (nccl-tests#178 "NV12")
    "nvlink_link_bw": 20.0,     # SM80_NVLINK_BW (topo.h)
    "nvswitch": True,           # 6 NVSwitch gen2 on the HGX A100 board
    "nvls": False,              # no NVLink SHARP before Hopper (nvlsEfficiency[Ampere] = 0)
    "nics_per_node": 8,         # DGX A100: 8 ConnectX-6 for compute
    "nic_gbps": 200,            # HDR InfiniBand -> 25 GB/s per NIC
    "latency_inter_us": 0.0,
    "collnet": False,
    "nvls_fill_kib": 128.0,     # unused: no NVLS
    **FITTED,
}

# ABCI 2.0 compute node (A), used only to price the "other" rows of aistabci/abci2.0benchmark:
# 8x A100-SXM4-40GB (the logs' device names) on NVSwitch, with 4 HDR NICs and Intel Xeon hosts as
# ABCI describes the node (not confirmed in the sources read here). a100-nvlink-ib with 4 NICs.
ABCI_A100_4NIC = dict(A100_NVLINK_IB, name="abci-a100-4nic", cpu="intel", nics_per_node=4)

PRESETS = {p["name"]: p for p in (H100_NVLINK_IB, A100_NVLINK_IB, ABCI_A100_4NIC)}
FITTED_KEYS = tuple(FITTED)


# ---------------------------------------------------------------------------------------------
# Topology -> NCCL's graphs (search.cc ncclTopoCompute, simplified to NVSwitch systems with one
# NIC per GPU). A graph is (nChannels, bwIntra, bwInter) in GB/s per channel.
# ---------------------------------------------------------------------------------------------
def _nvlink_bw(p):
    return p["nvlink_links"] * p["nvlink_link_bw"]


def _nic_bw(p):
    return p["nic_gbps"] * 1000.0 / 8000.0  # NCCL: NET bw = speed (Mb/s) / 8000 (topo.cc)


def _dup(n, s, arch):
    """ncclTopoDupChannels: double the channels and halve their speed on fast links."""
    if s < 25.0:
        return n, s
    if arch != "ampere" and s < 50.0 and n > 4:
        return n, s
    n2 = min(2 * n, RING_MAX_CHANNELS)
    return n2, s / math.ceil(n2 / n)


def _ring_graph(p, ppn, nnodes):
    a = ARCH[p["arch"]]
    total = _nvlink_bw(p)
    if nnodes == 1:
        speeds = a["speeds_intra"]
        i = 0
        while i < len(speeds) - 1 and speeds[i] > total:
            i += 1
        best = None
        first = speeds[i]
        while True:
            s = speeds[i]
            n = min(RING_MAX_CHANNELS, int(total / s + 1e-9))
            if n >= 1 and (best is None or n * s > best[0] * best[1]):
                best = (n, s)
            if n * s >= total or n >= RING_MAX_CHANNELS:
                break
            if i + 1 < len(speeds) and speeds[i + 1] / first > 0.49:
                i += 1
            else:
                break
        n, s = _dup(best[0], best[1], p["arch"])
        # pass 2: a faster speed with the same channels, if the links allow it
        for s2 in sorted(a["speeds_intra"]):
            if s2 > s and n * s2 <= total:
                s = s2
        return n, s, s
    speeds = a["speeds_inter"]
    rails = max(1, min(ppn, p["nics_per_node"]))
    nic = _nic_bw(p)
    s = next(x for x in speeds if x <= nic and rails * x <= total)
    n = rails * max(1, int(nic / s + 1e-9))
    n = min(n, RING_MAX_CHANNELS)
    n, s = _dup(n, s, p["arch"])
    return n, s, s


def _tree_graph(p, ppn, nnodes):
    n, s_intra, s_inter = _ring_graph(p, ppn, nnodes)
    if nnodes == 2:
        # search.cc pass 2: "increase bwIntra for trees (2 nodes or collnet)", below 2 x bwInter
        total = _nvlink_bw(p)
        for s2 in sorted(ARCH[p["arch"]]["speeds_inter"]):
            if s_intra < s2 < 2 * s_inter and n * s2 <= total:
                s_intra = s2
    return n, s_intra, s_inter


def _nvls_graph(p, ppn, nnodes):
    if not (p["nvls"] and p["nvswitch"]) or ppn < 2:
        return None
    a = ARCH[p["arch"]]
    total = _nvlink_bw(p)
    n = min(NVLS_MAX_ARITY, ppn)
    speeds = a["speeds_intra"] if nnodes == 1 else a["speeds_inter"]
    s_intra = next(x for x in speeds if n * x <= total)
    # pass 2 raises bwInter only, up to below 2 x bwIntra, and to the NIC speed between nodes
    cap = speeds[0] if nnodes == 1 else next(x for x in speeds if x <= _nic_bw(p))
    s_inter = max([x for x in speeds if x < 2 * s_intra and x <= cap] + [s_intra])
    return n, s_intra, s_inter


def _comm_channels(p, ring_n, nnodes, ring_bw):
    """comm->nChannels after connect.cc duplicates the ring channels."""
    nc = min(MAXCHANNELS, 2 * ring_n)
    if p["arch"] != "ampere" and nnodes > 1 and ring_bw > 45.0 and nc < 16:
        nc *= 2
    return nc


# ---------------------------------------------------------------------------------------------
# NCCL's cost table (tuning.cc ncclTopoTuneModel + ncclTopoGetAlgoTime)
# ---------------------------------------------------------------------------------------------
def _log2i(x):
    return int(math.floor(math.log2(x))) if x >= 1 else 0


def candidates(p, op, nranks, nnodes):
    """Enabled (algo, proto, latency_us, bandwidth_GBps) for op, as NCCL's tuner tables them.

    bandwidth is NCCL's "algorithm bandwidth": time_us = lat + nBytes / (1000 * bw).
    """
    a = ARCH[p["arch"]]
    ppn = nranks // nnodes
    idx2 = min(nnodes, 3) - 1
    if nnodes == 1:
        ll_max = a["ll_max_bw_1node"]
    else:
        ll_max = LL_MAX_BW_MULTINODE[p["cpu"]][0 if nnodes == 2 else 1]
    nsteps = {"all_reduce": 2 * (nranks - 1), "all_gather": nranks - 1,
              "reduce_scatter": nranks - 1}.get(op, nranks)
    ring = _ring_graph(p, ppn, nnodes)
    graphs = {"Ring": ring, "Tree": _tree_graph(p, ppn, nnodes), "PAT": _tree_graph(p, ppn, nnodes)}
    nv = _nvls_graph(p, ppn, nnodes)
    if nv:
        graphs["NVLS"] = nv
        graphs["NVLSTree"] = nv
    out = []
    for algo in ("Tree", "Ring", "NVLS", "NVLSTree", "PAT"):
        if algo not in graphs:
            continue
        # --- enablement (tuning.cc loop filters, enqueue.cc, ncclTopoTuneModel disables) ---
        if op == "broadcast" and algo != "Ring":
            continue
        if op in ("all_gather", "reduce_scatter") and algo not in ("Ring", "NVLS", "PAT"):
            continue
        if op == "all_reduce" and algo == "PAT":
            continue
        if algo == "NVLSTree" and (nnodes == 1 or op != "all_reduce"):
            continue
        if algo == "NVLS" and nnodes > 1 and not p["collnet"]:
            continue
        if algo == "PAT" and ppn != 1:
            continue
        n_ch, bw_intra, bw_inter = graphs[algo]
        for pi, proto in enumerate(PROTOS):
            if algo in ("NVLS", "NVLSTree", "PAT") and proto != "Simple":
                continue
            # --- bandwidth ---
            bw = bw_intra if nnodes <= 2 else bw_inter
            if algo in ("NVLS", "NVLSTree"):
                if n_ch < 2:
                    continue
                intra = bw_intra * a["nvls_efficiency"] * (n_ch - 1) / n_ch
                intra *= 2.0 if op == "all_reduce" else (ppn - 1) / ppn
                inter = bw_inter * (2.0 if (nnodes <= 2 and algo == "NVLSTree") else 1.0)
                cap = a["per_ch_nvls_tree"][idx2] if algo == "NVLSTree" else float("inf")
                bw = min(intra, inter, cap)
            bus = n_ch * bw
            if algo == "Ring" and proto == "LL":
                bus = min(ll_max, bus * 0.5)
            if algo == "Ring" and proto == "LL128":
                bus = min(bus * 0.92, n_ch * a["per_ch_ring_ll128"][idx2])
            if algo == "Tree" and op == "all_reduce":
                bus = min(bus * 0.92, n_ch * a["per_ch_tree"][idx2])
            if algo == "Tree" and proto == "LL":
                bus = min(bus / 3.8, ll_max)
            if algo == "Tree" and proto == "LL128":
                bus = min(bus * (7.0 / 9.0 if nnodes == 1 else 120.0 / 128.0),
                          n_ch * a["per_ch_tree_ll128"][idx2])
            if algo == "PAT":
                bus *= 0.75
            if not (algo != "Ring" and op in ("all_gather", "reduce_scatter")):
                bus *= nranks / nsteps if algo in ("Ring", "NVLS", "NVLSTree") else 0.5
            # --- latency ---
            lat = BASE_LAT_US[algo][pi]
            intra_lat = HW_LAT_US["nvlink"][algo][pi]
            inter_lat = (HW_LAT_US["net"]["Tree"][pi] if ppn == 1 else HW_LAT_US["net"][algo][pi])
            inter_lat += p["latency_inter_us"] * (2 if proto == "Simple" else 1)
            if algo == "Ring":
                hw = "nvlink" if nnodes == 1 else "net"
                if op == "broadcast":
                    lat += HW_LAT_US[hw]["Ring"][pi]  # sameChannels: one hop
                else:
                    net_ovh = 0.0
                    if nnodes > 1:
                        net_ovh = NET_OVERHEAD_US[p["cpu"]] * (3 if proto == "Simple" else 1)
                    il = max(intra_lat, net_ovh)
                    n_inter = 0 if nnodes == 1 else (2 * (nnodes - 1) if op == "all_reduce" else nnodes - 1)
                    lat += (nsteps - n_inter) * il + n_inter * inter_lat
            elif algo == "Tree":
                lat += 2 * ((ppn - 1) * intra_lat + _log2i(nnodes) * inter_lat)
            elif algo == "NVLS":
                lat = intra_lat + (inter_lat if nnodes > 1 else 0.0)
            elif algo == "NVLSTree":
                lat += intra_lat + 2 * _log2i(nnodes) * inter_lat
            elif algo == "PAT":
                lat += _log2i(nnodes) * (inter_lat / 3.5) + nranks * 2.8
            out.append((algo, proto, lat, bus, n_ch))
    return out


def _algo_time_us(p, op, nranks, nnodes, nbytes, algo, proto, lat, bw, comm_ch):
    """ncclTopoGetAlgoTime: time = lat + nBytes / (1000 * bw), with NCCL's corrections."""
    a = ARCH[p["arch"]]
    log_size = _log2i(nbytes >> 6) if nbytes >= 64 else -1
    if algo == "Tree" and op == "all_reduce" and 0 <= log_size < 23:
        bw *= TREE_CORRECTION[proto][log_size]
    if (algo == "Ring" and proto == "Simple" and nnodes > 1 and op == "all_reduce"
            and nbytes / (comm_ch * nranks) >= 64):
        lat *= a["ring_simple_plateau"]
    return lat + nbytes / (1000.0 * bw)


def _pipeline_us(p, op, nranks, nnodes, algo, proto, algbw, n_ch, nbytes):
    """Per-step chunk serialization, which NCCL's tuner leaves out (an addition of this model).

    NCCL's latency term charges each step of an algorithm a fixed per-hop cost. A rank cannot
    forward a step's data before the first chunk of it has arrived, so every step also pays one
    chunk's transfer time on its channel: extra = depth * min(chunk, step share) / channel bw,
    where depth is the number of sequential steps and the step share is the data one channel
    carries in one step. Small calls (share < chunk) pay about one more nBytes / bw; large calls
    a constant that vanishes against the transfer. The chunk is fitted for Ring/Tree/PAT
    (fill_chunk_kib) and is NCCL's NVLS chunk size for NVLS/NVLSTree (nvls_fill_kib). LL moves
    8-byte lines with inline flags and is charged nothing.
    """
    if proto == "LL":
        return 0.0
    nvls = algo in ("NVLS", "NVLSTree")
    chunk = (p["nvls_fill_kib"] if nvls else p["fill_chunk_kib"]) * 1024.0
    if chunk <= 0:
        return 0.0
    ppn = nranks // nnodes
    if algo == "Ring":
        depth = 2 * (nranks - 1) if op == "all_reduce" else nranks - 1
        share = nbytes / n_ch if op == "broadcast" else nbytes / (nranks * n_ch)
    elif algo == "Tree":
        depth = 2 * ((ppn - 1) + _log2i(nnodes))
        share = nbytes / n_ch
    elif algo == "PAT":
        depth = max(1, _log2i(nranks))
        share = nbytes / (nranks * n_ch)
    else:  # NVLS, NVLSTree: each local rank owns 1/ppn of the buffer on every NVLS channel
        depth = ppn + (2 * _log2i(nnodes) if algo == "NVLSTree" else 0)
        share = nbytes / (ppn * n_ch)
    ch_bw = algbw / n_ch * 1000.0  # bytes per us per channel
    return depth * min(chunk, share) / ch_bw


def _all_to_all_us(p, nranks, nnodes, nbytes):
    """all_to_all: n-1 concurrent sends of nbytes/n; NVLink within the node, NICs between."""
    ppn = nranks // nnodes
    chunk = nbytes / nranks
    ring_n, ring_s, _ = _ring_graph(p, ppn, 1)
    nvl = ring_n * ring_s * p["p2p_nvlink_eff"]            # GB/s per GPU over NVLink
    rails = max(1, min(ppn, p["nics_per_node"]))
    net = _nic_bw(p) * p["p2p_net_eff"] * rails / ppn        # GB/s per GPU through the NICs
    t_intra = (ppn - 1) * chunk / (1000.0 * nvl) if ppn > 1 else 0.0
    t_inter = (nranks - ppn) * chunk / (1000.0 * net) if nnodes > 1 else 0.0
    # Latency: NCCL's Ring LL base plus one NVLink LL hop (peers are served in parallel on
    # separate channels); between nodes one NET Simple hop plus the per-send network overhead.
    lat = BASE_LAT_US["Ring"][0] + (HW_LAT_US["nvlink"]["Ring"][0] if ppn > 1 else 0.0)
    if nnodes > 1:
        lat += HW_LAT_US["net"]["Ring"][2] + NET_OVERHEAD_US[p["cpu"]] * (nranks - ppn)
    return lat * p["lat_scale"] + max(t_intra, t_inter)


def table(preset, op, nranks, nnodes, nbytes):
    """NCCL's own cost table for one call: (time_us, algo, proto, lat_us, algbw, n_ch) for every
    enabled (algorithm, protocol), cheapest first, with NCCL's constants unscaled."""
    p = PRESETS[preset] if isinstance(preset, str) else preset
    ring_n, ring_s, _ = _ring_graph(p, nranks // nnodes, nnodes)
    comm_ch = _comm_channels(p, ring_n, nnodes, ring_s)
    rows = []
    for algo, proto, lat, bw, n_ch in candidates(p, op, nranks, nnodes):
        t = _algo_time_us(p, op, nranks, nnodes, nbytes, algo, proto, lat, bw, comm_ch)
        rows.append((t, algo, proto, lat, bw, n_ch))
    rows.sort()
    return rows


def predict(preset, op, nranks, nnodes, nbytes, algo=None):
    """Seconds for one nccl-tests call of `op` with nccl-tests size `nbytes`.

    preset: a preset name or dict. algo: force an algorithm (NCCL_ALGO), else NCCL's choice.
    Returns (seconds, algorithm, protocol). The (algorithm, protocol) is NCCL's choice: the
    cheapest entry of NCCL's own table. Its time is then priced with the fitted additions:
    latencies scaled by lat_scale, the per-step chunk serialization and the launch overhead.
    """
    p = PRESETS[preset] if isinstance(preset, str) else preset
    if op not in OPS:
        raise ValueError(f"op {op!r} is not one of {OPS}")
    if nranks <= 1:
        return 0.0, "none", "none"
    if nranks % nnodes:
        raise ValueError("nranks must be a multiple of nnodes")
    if nranks // nnodes > p["gpus_per_node"]:
        raise ValueError("more ranks per node than GPUs per node")
    if op == "all_to_all":
        t = _all_to_all_us(p, nranks, nnodes, nbytes) + p["launch_us"]
        return t * 1e-6, "P2P", "Simple"
    rows = [r for r in table(p, op, nranks, nnodes, nbytes) if algo is None or r[1] == algo]
    if not rows:
        raise ValueError(f"no enabled algorithm for {op} on {nranks} ranks ({algo=})")
    _, a, proto, lat, bw, n_ch = rows[0]
    ring_n, ring_s, _ = _ring_graph(p, nranks // nnodes, nnodes)
    comm_ch = _comm_channels(p, ring_n, nnodes, ring_s)
    t = _algo_time_us(p, op, nranks, nnodes, nbytes, a, proto, lat * p["lat_scale"], bw, comm_ch)
    t += _pipeline_us(p, op, nranks, nnodes, a, proto, bw, n_ch, nbytes) + p["launch_us"]
    return t * 1e-6, a, proto


if __name__ == "__main__":
    import sys
    preset = sys.argv[1] if len(sys.argv) > 1 else "h100-nvlink-ib"
    op = sys.argv[2] if len(sys.argv) > 2 else "all_reduce"
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 8
    nodes = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    print(f"{preset} {op} nranks={n} nnodes={nodes}")
    for k in range(3, 35):
        s, a, pr = predict(preset, op, n, nodes, 1 << k)
        print(f"{1 << k:>12} {s * 1e6:12.2f} us  {a:>8}/{pr:<6}")
