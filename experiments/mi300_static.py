#!/usr/bin/env python3
"""Static analysis of gfx942 code objects in Sextant bundles (no AMD GPU needed; none was used).

For each kernel of each bundle (tune --measure bundle): the planned MFMA intrinsic (knob mma) and
whether the disassembly (llvm-objdump-22 --mcpu=gfx942) holds exactly that instruction and no FMA
inner loop; registers, AGPRs, LDS and occupancy from the code object's metadata; and an ESTIMATE
of how close the K loop is to the matrix-core roofline:

  MFMA cycles    = MFMAs in the loop x cycles per MFMA, where cycles = 2mnk / (peak flops per SIMD
                   per clock) from the device table (MI300X: 1307.4 TFLOP/s, 304 CUs x 4 SIMDs,
                   2100 MHz -> 512 flops/clock/SIMD: 32 cycles for 32x32x8, 16 for 16x16x16);
  other cycles   = 4 per other vector/LDS/global instruction of the loop (a wave64 instruction
                   issues over 4 cycles on a 16-lane SIMD), 1 per scalar instruction;
  estimate range = MFMA cycles / (MFMA + other)  [nothing overlaps]  to
                   MFMA cycles / max(MFMA, other) [everything else hides under the MFMAs].

These are estimates from instruction counts, never measurements: memory latency, bank conflicts,
dependencies and clock behaviour are not modelled.

Usage: mi300_static.py BUNDLE_DIR... [--json OUT.json]
"""
import json
import re
import subprocess
import sys

PEAK_TFLOPS, CUS, MHZ = 1307.4, 304, 2100  # hwspec/data/devices.json, mi300x (bf16 peak is the same)
FLOPS_PER_SIMD_CLOCK = PEAK_TFLOPS * 1e12 / (CUS * 4 * MHZ * 1e6)
SHAPES = {1: (32, 32, 8), 2: (16, 16, 16)}


def disassemble(path):
    """[(address, mnemonic, whole line)] and the kernel symbols' start addresses."""
    out = subprocess.run(["llvm-objdump-22", "-d", "--mcpu=gfx942", path], check=True, capture_output=True,
                         text=True).stdout
    insns, symbols = [], {}
    for line in out.splitlines():
        h = re.match(r"([0-9a-fA-F]+) <(\w+)>:", line)
        if h:
            symbols[h.group(2)] = int(h.group(1), 16)
            continue
        m = re.match(r"\s+(\w+)\s*.*?//\s*([0-9A-Fa-f]+):", line)
        if m:
            insns.append((int(m.group(2), 16), m.group(1), line))
    return insns, symbols


def k_loop(insns, symbols):
    """The shortest backward-branch range that holds MFMAs (the K loop), or None."""
    best = None
    for i, (addr, op, line) in enumerate(insns):
        if not op.startswith("s_cbranch") and op != "s_branch":
            continue
        m = re.search(r"<(\w+)\+0x([0-9a-f]+)>", line)
        if not m or m.group(1) not in symbols:
            continue
        target = symbols[m.group(1)] + int(m.group(2), 16)
        if target > addr:
            continue
        start = next(j for j, x in enumerate(insns) if x[0] >= target)
        body = insns[start:i + 1]
        if any(x[1].startswith("v_mfma") for x in body) and (best is None or len(body) < len(best)):
            best = body
    return best, best is not None


def analyse(bundle):
    manifest = json.load(open(f"{bundle}/manifest.json"))
    rows = []
    for k in manifest["kernels"]:
        knobs = k["knobs"]
        insns, symbols = disassemble(f"{bundle}/{k['file']}")
        mfma_ops = {x[1] for x in insns if x[1].startswith("v_mfma")}
        shape = SHAPES.get(knobs["mma"])
        dtype = "bf16" if "bf16" in k["workload"] else "f16"
        planned = f"v_mfma_f32_{shape[0]}x{shape[1]}x{shape[2]}_{dtype}" if shape else None
        fma = sum(1 for x in insns if x[1].startswith(("v_fma_mix", "v_pk_fma", "v_fmac_f32", "v_fma_f32")))
        body, is_loop = k_loop(insns, symbols)
        body = body or insns
        n_mfma = sum(1 for x in body if x[1].startswith("v_mfma"))
        # Barrier-free stretches of the loop: does one issue global loads among its MFMAs (the next
        # K tile in flight while the matrix cores work: pipeline = 2)?
        stretches, cur = [], []
        for x in body:
            if x[1] == "s_barrier":
                stretches.append(cur)
                cur = []
            else:
                cur.append(x[1])
        stretches.append(cur)
        overlap = any(any(o.startswith("v_mfma") for o in st) and any(o.startswith("global_load") for o in st)
                      for st in stretches)
        n_scalar = sum(1 for x in body if x[1].startswith("s_"))
        n_other = len(body) - n_mfma - n_scalar
        cyc = 2 * shape[0] * shape[1] * shape[2] / FLOPS_PER_SIMD_CLOCK if shape else 0
        mf, other = n_mfma * cyc, 4 * n_other + n_scalar
        st = k.get("static", {})
        res = st.get("resources", {})
        rows.append({
            "workload": k["workload"], "id": k["id"], "knobs": knobs, "planned": planned,
            "mfma_in_code": sorted(mfma_ops), "mfma_ok": planned is not None and mfma_ops == {planned} and fma == 0,
            "loop_found": is_loop, "loop_mfma": n_mfma, "loop_other_vector": n_other, "loop_scalar": n_scalar,
            "loop_ds_read": sum(1 for x in body if x[1].startswith("ds_read")),
            "loop_barriers": sum(1 for x in body if x[1] == "s_barrier"), "loads_overlap_mfma": overlap,
            "mfma_cycles": mf, "other_cycles": other,
            "estimate_low": mf / (mf + other) if mf + other else 0.0,
            "estimate_high": mf / max(mf, other) if mf else 0.0,
            "vgprs": res.get("registers"), "agprs": res.get("agprs"), "lds": res.get("smem_bytes"),
            "occupancy": st.get("occupancy", {}), "preflight": st.get("preflight"),
        })
    return rows


def main():
    args = sys.argv[1:]
    out_json = None
    if "--json" in args:
        i = args.index("--json")
        out_json = args[i + 1]
        del args[i:i + 2]
    rows = []
    for b in args:
        rows += analyse(b)
    print(f"# cycles per MFMA from the datasheet peak: {FLOPS_PER_SIMD_CLOCK:.0f} flops/clock/SIMD "
          f"(32x32x8: {2*32*32*8/FLOPS_PER_SIMD_CLOCK:.0f}, 16x16x16: {2*16*16*16/FLOPS_PER_SIMD_CLOCK:.0f} cycles)")
    print("# ESTIMATES from instruction counts, not measurements (no AMD GPU was used)")
    print(f"{'workload':40} {'intrinsic':26} {'ok':3} {'wg':>7} {'wave':>6} {'bk':>3} {'loopMFMA':>8} "
          f"{'other':>6} {'dsrd':>5} {'kmaj':>4} {'pipe':>4} {'bar':>3} {'VGPR':>5} {'AGPR':>5} {'LDS':>6} {'occ':>4} {'est. MFMA share':>16}")
    for r in rows:
        kn = r["knobs"]
        occ = r["occupancy"].get("blocks_per_cu", "")
        print(f"{r['workload']:40} {str(r['planned']):26} {'yes' if r['mfma_ok'] else 'NO':3} "
              f"{kn['block_m']}x{kn['block_n']:<4} {kn['warp_m']}x{kn['warp_n']:<3} {kn['block_k']:>3} "
              f"{r['loop_mfma']:>8} {r['loop_other_vector']:>6} {r['loop_ds_read']:>5} {kn.get('lds_k_major', 0):>4} "
              f"{kn.get('pipeline', 1):>4} {r['loop_barriers']:>3} {str(r['vgprs']):>5} "
              f"{str(r['agprs']):>5} {str(r['lds']):>6} {str(occ):>4} "
              f"{100*r['estimate_low']:5.1f}%-{100*r['estimate_high']:5.1f}%")
    # LDS reads per MFMA in the K loop, by operand layout in LDS (the knob lds_k_major).
    for kmaj in (0, 1):
        sel = [r for r in rows if r["knobs"].get("lds_k_major", 0) == kmaj and r["loop_mfma"]]
        if sel:
            per = sum(r["loop_ds_read"] / r["loop_mfma"] for r in sel) / len(sel)
            print(f"# lds_k_major={kmaj}: {len(sel)} kernels, mean LDS reads per MFMA in the K loop {per:.2f}")
    # Barriers per K loop and loads in flight during the MFMAs, by LDS buffering (the knob pipeline).
    for pipe in (1, 2):
        sel = [r for r in rows if r["knobs"].get("pipeline", 1) == pipe and r["loop_found"]]
        if sel:
            bars = sum(r["loop_barriers"] for r in sel) / len(sel)
            ov = sum(r["loads_overlap_mfma"] for r in sel)
            print(f"# pipeline={pipe}: {len(sel)} kernels with a K loop, mean barriers per loop {bars:.2f}, "
                  f"{ov} with global loads between MFMAs in a barrier-free stretch")
    ok = sum(r["mfma_ok"] for r in rows)
    print(f"# {ok}/{len(rows)} kernels hold exactly the planned MFMA instruction and no FMA")
    by_wl = {}
    for r in rows:
        by_wl.setdefault(r["workload"], []).append(r)
    for wl, rs in by_wl.items():
        best = max(rs, key=lambda r: r["estimate_high"])
        print(f"# {wl}: best estimated MFMA share {100*best['estimate_low']:.1f}%-{100*best['estimate_high']:.1f}% "
              f"({best['planned']}, {best['knobs']['block_m']}x{best['knobs']['block_n']}x{best['knobs']['block_k']}, "
              f"wave {best['knobs']['warp_m']}x{best['knobs']['warp_n']}, lds_k_major {best['knobs'].get('lds_k_major', 0)}, pipeline {best['knobs'].get('pipeline', 1)}) = {PEAK_TFLOPS*best['estimate_low']:.0f}-"
              f"{PEAK_TFLOPS*best['estimate_high']:.0f} TFLOP/s if nothing but the loop's issue counted (estimate)")
    if out_json:
        json.dump(rows, open(out_json, "w"), indent=1)
    return 0 if ok == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
