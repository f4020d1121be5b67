"""Results records read back from a tier-3 report (docs/zoo_report.md), for run_zoo.py --seed-from-report.

The report is committed; the results file (build/zoo/tier3.jsonl) is not. Seeding a results file
from the report lets a fresh clone resume tier 3 where the report stands instead of starting
over (the full run takes most of a day on 2 cores). A report keeps less than a record: status,
max relative difference (to the report's precision), how a pass outside rtol was judged
(judged_by), step1_only, the eager run's device time
and host-fallback ops, the compiled shares, and the memory section's resident sizes. Losses, float64 distances and compile
failures are not in it; every seeded record says where it came from (`from_report`), and the
report counts such records. An expected failure's cell says `xfail`, not how it failed: it is
seeded as a failure, so `--rerun` runs it again.

Thread-safety: plain functions, no shared state.
"""
import re

MODES = ("eager", "compile", "adaptive")
_CELL = re.compile(r"^(pass|fail|error|xfail)(?: \(([-+.\de]+)\))?(?: by (float64|f32 samples|beyond rtol))?"
                   r"( step 1 only)?( no wait)?$")
# Reports before the "by ..." marks: a pass farther from CPU than the default rtol passed by the
# float64 check or by CPU float32 samples; which one, the report did not say.
_DEFAULT_RTOL = 1e-3


def _row(line):
    # cells are split on unescaped pipes (the report escapes those inside error texts)
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.strip()[1:-1])]


def records_from_report(path, source=None):
    """[record] for every (model, mode) cell of the report at `path` that has a result."""
    source = source or path
    text = open(path).read()
    marks_how = '"by float64"' in text  # the report marks how passes outside rtol were judged
    lines = text.splitlines()
    errors = {}
    memory = {}
    section = None
    for line in lines:
        if line.startswith("## "):
            section = line[3:].strip()
            continue
        if not line.startswith("| ") or line.startswith("| model"):
            continue
        c = _row(line)
        if section == "Failures" and len(c) >= 4:
            errors[(c[0], c[1])] = c[3]
        elif section == "Memory" and len(c) >= 4:
            memory[(c[0], c[1])] = {"rss_before_mb": int(c[2]), "device_peak_rss_mb": int(c[3])}
            if len(c) >= 6 and c[5]:
                memory[(c[0], c[1])]["device_peak_alloc_mb"] = int(c[5])
    records = []
    header = None
    for line in lines:
        if line.startswith("## "):
            break  # the per-model table ends where the sections begin
        if line.startswith("| model | features |"):
            header = _row(line)
            continue
        if header is None or not line.startswith("| ") or line.startswith("|---"):
            continue
        c = _row(line)
        if len(c) != len(header):
            raise ValueError(f"{path}: a table row with {len(c)} cells, want {len(header)}: {line[:120]}")
        row = dict(zip(header, c))
        for mode in MODES:
            cell = row[mode]
            if cell == "—":
                continue
            m = _CELL.match(cell)
            if not m:
                raise ValueError(f"{path}: cannot read the {mode} cell of {row['model']}: {cell!r}")
            status, rel, how, step1, no_wait = m.groups()
            rec = {"model": row["model"], "mode": mode, "status": status, "from_report": source}
            if status == "xfail":
                rec["status"] = "fail"
                rec["error"] = ("an expected failure in " + source + "; its own error was not kept: "
                                + errors.get((row["model"], mode), ""))[:300]
            elif status != "pass":
                rec["error"] = errors.get((row["model"], mode), "")
            if rel is not None:
                rec["max_rel"] = float(rel)
            if step1:
                rec["step1_only"] = True
            if status == "pass" and how:
                rec["judged_by"] = how
            elif status == "pass" and not marks_how and rel is not None and float(rel) > _DEFAULT_RTOL:
                rec["judged_by"] = "beyond rtol"
            if mode == "adaptive" and "compiled share (compile / adaptive)" in row and not no_wait:
                rec["adaptive_waited"] = True  # reports before that column predate the wait
            if mode == "eager" and row["eager s"]:
                rec["device_s"] = float(row["eager s"])
                # the report drops the aten:: namespace of aten ops only
                rec["host_fallback_ops"] = [x if "::" in x else "aten::" + x
                                            for x in (y.strip() for y in row["host-fallback ops"].split(",")) if x]
            share = row.get("compiled share (compile / adaptive)")
            if share is not None:  # "<compile> / <adaptive>", "—" where a mode has no result
                parts = [x.strip() for x in share.split("/")] if share else []
                if len(parts) == 2 and mode in ("compile", "adaptive"):
                    val = parts[0 if mode == "compile" else 1]
                    if val not in ("", "—"):
                        rec["compiled_share"] = float(val)
            elif mode == "compile" and row.get("compiled share"):  # reports before the adaptive column
                rec["compiled_share"] = float(row["compiled share"])
            rec.update(memory.get((row["model"], mode), {}))
            records.append(rec)
    if header is None:
        raise ValueError(f"{path}: no per-model table (is it a tier-3 report?)")
    return records
