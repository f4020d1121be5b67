"""Inspect and maintain the compiled-group disk cache.

    python3 -m torch_trn cache ls     [--dir D] [--json]    one line per entry: key, levels, size, last access, status
    python3 -m torch_trn cache stats  [--dir D] [--json]    entries, bytes (total and by level), temps, foreign files, limit
    python3 -m torch_trn cache clear  [--dir D]             removes entries and temp files (never foreign files)
    python3 -m torch_trn cache verify [--dir D] [--delete] [--json]
                                                            checks every entry (header, hash, versions, ownership,
                                                            permissions); exit 1 if one is bad; --delete removes them

--dir defaults to the cache the runtime uses: NEURON_CACHE_DIR, else $XDG_CACHE_HOME/torch_trn,
else ~/.cache/torch_trn.
A cache directory that does not exist is an empty cache (ls, stats, verify and clear print
"empty" and exit 0). Exit codes: 0 ok, 1 verify found a bad entry, 2 usage error.

Layout (docs: the runtime's cache): <dir>/<h[0:2]>/<h[2:4]>/<h>.O<opt>c<cg> entries (code),
<h>.plan entries (the plans of a flushed segment), .<name>.tmp.<pid>.<random> files being written (or left by a killed writer), anything else is
"foreign" and never loaded. Last access is the entry's mtime: the runtime touches an entry on
every hit and evicts the least recently used ones beyond NEURON_CACHE_DISK_BYTES.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

EXIT_OK, EXIT_BAD, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    pass


def _C():
    """The extension, with the device started: the first call imports torch (~3 s)."""
    from ._bootstrap import start
    return start()


# --------------------------------------------------------------------------------------------
# formatting
# --------------------------------------------------------------------------------------------
def format_size(n: int) -> str:
    """512 B, 12.3 KiB, 4.0 MiB, 2.0 GiB."""
    n = int(n)
    if n < 1024:
        return f"{n} B"
    for unit in ("KiB", "MiB", "GiB"):
        n /= 1024.0
        if n < 1024 or unit == "GiB":
            return f"{n:.1f} {unit}"
    raise AssertionError("unreachable")


def format_age(mtime: float, now: float | None = None) -> str:
    """'just now', '42 s ago', '3 min ago', '5 h ago', '2 d ago' ('in the future' for clock skew)."""
    age = (time.time() if now is None else now) - mtime
    if age < -1:
        return "in the future"
    if age < 1:
        return "just now"
    if age < 60:
        return f"{int(age)} s ago"
    if age < 3600:
        return f"{int(age // 60)} min ago"
    if age < 86400:
        return f"{int(age // 3600)} h ago"
    return f"{int(age // 86400)} d ago"


def plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


def levels(e: dict) -> str:
    return "plans" if e["kind"] == "plans" else f"O{e['opt_level']}c{e['codegen_level']}"


ENTRY_KINDS = ("entry", "plans")  # code entries and plan entries: both verified, counted, evicted


def short_target(target: str) -> str:
    """'x86_64-pc-linux-gnu;sapphirerapids' of the full target key (which lists every CPU feature)."""
    return ";".join(target.split(";")[:2])


def other_build(e: dict, info: dict) -> bool:
    """An entry written by another torch-trn build (or for another CPU): intact, but never loaded."""
    return bool(e.get("compiler_version")) and (e["compiler_version"] != info["compiler_version"]
                                                or e.get("target") != info["target"])


def table(rows: list, header: list, right=()) -> str:
    """Aligned columns; `right` = indexes of right-aligned columns (numbers, sizes)."""
    cells = [header] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    out = []
    for r in cells:
        parts = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))]
        out.append("  ".join(parts).rstrip())
    return "\n".join(out)


# --------------------------------------------------------------------------------------------
# directory and listing
# --------------------------------------------------------------------------------------------
def default_dir() -> str:
    """The directory the runtime of this process uses (torch_trn._C.cache_info(), from
    NEURON_CACHE_DIR, else $XDG_CACHE_HOME/torch_trn, else ~/.cache/torch_trn)."""
    value = os.environ.get("NEURON_CACHE_DIR")
    if value is not None and value.strip().lower() in ("", "off"):
        raise UsageError(f"NEURON_CACHE_DIR={value!r}: the disk cache is off; name a directory with --dir")
    info = _C().cache_info()
    if info.get("dir"):
        return info["dir"]
    if value is not None:
        return os.path.expanduser(value)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return os.path.join(xdg, "torch_trn") if xdg else os.path.join(os.path.expanduser("~"), ".cache", "torch_trn")


def resolve_dir(arg: str | None) -> str:
    d = os.path.abspath(os.path.expanduser(arg) if arg else default_dir())
    if os.path.exists(d) and not os.path.isdir(d):
        raise UsageError(f"{d} is not a directory")
    return d


def list_dir(d: str, verify: bool) -> list:
    """cache_entries(d) ([] when d does not exist): entries by last access (newest first), then
    temp files, then foreign files."""
    if not os.path.isdir(d):
        return []
    entries = list(_C().cache_entries(d, verify))
    order = {"entry": 0, "plans": 0, "temp": 1, "foreign": 2}
    entries.sort(key=lambda e: (order.get(e["kind"], 3), -e.get("mtime", 0.0), e["path"]))
    return entries


def by_kind(entries: list, *kinds: str) -> list:
    return [e for e in entries if e["kind"] in kinds]


def _rel(d: str, path: str) -> str:
    try:
        return os.path.relpath(path, d)
    except ValueError:
        return path


# --------------------------------------------------------------------------------------------
# commands
# --------------------------------------------------------------------------------------------
def cmd_ls(args) -> int:
    d = resolve_dir(args.dir)
    entries = list_dir(d, verify=True)
    if args.json:
        print(json.dumps(entries, indent=1))
        return EXIT_OK
    if not entries:
        print(f"{d}: empty")
        return EXIT_OK
    now = time.time()
    info = _C().cache_info()
    rows = []
    for e in entries:
        if e["kind"] in ENTRY_KINDS:
            status = e.get("status", "-") + (" (other build)" if other_build(e, info) else "")
            rows.append([e["key"], levels(e), format_size(e["size"]), format_age(e["mtime"], now), status])
        else:  # temp or foreign: name it by its path
            rows.append([_rel(d, e["path"]), "-", format_size(e["size"]), format_age(e["mtime"], now), e["kind"]])
    print(f"{d}:")
    print(table(rows, ["KEY", "LEVELS", "SIZE", "LAST ACCESS", "STATUS"], right={2}))
    return EXIT_OK


def summarize(d: str, entries: list) -> dict:
    good = by_kind(entries, *ENTRY_KINDS)
    temps, foreign = by_kind(entries, "temp"), by_kind(entries, "foreign")
    by_level = {}
    for e in good:
        slot = by_level.setdefault(levels(e), {"entries": 0, "bytes": 0})
        slot["entries"] += 1
        slot["bytes"] += e["size"]
    info = _C().cache_info()
    others = [e for e in good if other_build(e, info)]
    return {"dir": d, "exists": os.path.isdir(d), "entries": len(good), "bytes": sum(e["size"] for e in good),
            "other_builds": len(others), "other_builds_bytes": sum(e["size"] for e in others),
            "by_level": dict(sorted(by_level.items())), "temps": len(temps),
            "temp_bytes": sum(e["size"] for e in temps), "foreign": len(foreign),
            "limit": info["max_bytes"], "format_version": info["format_version"],
            "compiler_version": info["compiler_version"], "target": info["target"]}


def cmd_stats(args) -> int:
    d = resolve_dir(args.dir)
    s = summarize(d, list_dir(d, verify=False))
    if args.json:
        print(json.dumps(s, indent=1))
        return EXIT_OK
    if not s["exists"] or not (s["entries"] or s["temps"] or s["foreign"]):
        print(f"{d}: empty (limit {format_size(s['limit'])})")
        return EXIT_OK
    used = 100.0 * s["bytes"] / s["limit"] if s["limit"] else 0.0
    rows = [["entries", s["entries"], format_size(s["bytes"])]]
    rows += [[f"  {lv}", v["entries"], format_size(v["bytes"])] for lv, v in s["by_level"].items()]
    rows += [["temp files", s["temps"], format_size(s["temp_bytes"])],
             ["foreign files", s["foreign"], "-"],
             ["limit", "-", format_size(s["limit"])]]
    print(f"{d}:")
    print(table(rows, ["", "COUNT", "SIZE"], right={1, 2}))
    print(f"{used:.1f}% of the limit used (NEURON_CACHE_DISK_BYTES)")
    if s["other_builds"]:
        print(f"{plural(s['other_builds'], 'entry', 'entries')} ({format_size(s['other_builds_bytes'])}) from "
              "another torch-trn build or CPU: never loaded by this one, evicted when space is needed")
    print(f"this build: format {s['format_version']}, {s['compiler_version']}, target {short_target(s['target'])}")
    return EXIT_OK


def cmd_clear(args) -> int:
    d = resolve_dir(args.dir)
    if not os.path.isdir(d):
        print(f"{d}: empty (does not exist), nothing to clear")
        return EXIT_OK
    entries = list_dir(d, verify=False)
    n_entries, n_temps = len(by_kind(entries, *ENTRY_KINDS)), len(by_kind(entries, "temp"))
    size = sum(e["size"] for e in entries if e["kind"] in ENTRY_KINDS + ("temp",))
    removed = _C().cache_clear(d)
    foreign = by_kind(list_dir(d, verify=False), "foreign")
    print(f"{d}: removed {plural(removed, 'file')} ({plural(n_entries, 'entry', 'entries')}, "
          f"{plural(n_temps, 'temp file')}, {format_size(size)})"
          + (f"; left {plural(len(foreign), 'foreign file')} alone" if foreign else ""))
    return EXIT_OK


def cmd_verify(args) -> int:
    d = resolve_dir(args.dir)
    entries = list_dir(d, verify=True)
    good = by_kind(entries, *ENTRY_KINDS)
    bad = [e for e in good if e.get("status") != "ok"]
    deleted, delete_errors = [], []
    if args.delete:
        for e in bad:
            try:
                _C().cache_remove(e["path"])
                deleted.append(e["path"])
            except Exception as exc:  # noqa: BLE001  (reported, and verify still exits 1)
                delete_errors.append({"path": e["path"], "error": str(exc)})
    result = {"dir": d, "entries": len(good), "ok": len(good) - len(bad),
              "bad": [{"path": e["path"], "key": e.get("key"), "status": e.get("status")} for e in bad],
              "deleted": deleted, "delete_errors": delete_errors,
              "temps": len(by_kind(entries, "temp")), "foreign": len(by_kind(entries, "foreign"))}
    if args.json:
        print(json.dumps(result, indent=1))
    elif not entries:
        print(f"{d}: empty")
    else:
        if bad:
            rows = [[_rel(d, e["path"]), e.get("status"), "deleted" if e["path"] in deleted else ""] for e in bad]
            print(table(rows, ["BAD ENTRY", "REASON", ""]))
            for err in delete_errors:
                print(f"could not delete {err['path']}: {err['error']}", file=sys.stderr)
        print(f"{d}: {result['entries']} entries, {result['ok']} ok, {len(bad)} bad"
              + (f" ({len(deleted)} deleted)" if args.delete else "")
              + (f"; {plural(result['temps'], 'temp file')}" if result["temps"] else "")
              + (f"; {plural(result['foreign'], 'foreign file')} (never loaded)" if result["foreign"] else ""))
    return EXIT_BAD if bad else EXIT_OK


# --------------------------------------------------------------------------------------------
# entry point
# --------------------------------------------------------------------------------------------
def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python3 -m torch_trn cache", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", metavar="{ls,stats,clear,verify}")
    dir_help = "the cache directory (default: NEURON_CACHE_DIR, else $XDG_CACHE_HOME/torch_trn or ~/.cache/torch_trn)"
    for name, fn, help_ in (("ls", cmd_ls, "list entries"), ("stats", cmd_stats, "sizes and counts"),
                            ("clear", cmd_clear, "remove entries and temp files"),
                            ("verify", cmd_verify, "check every entry; exit 1 if one is bad")):
        sp = sub.add_parser(name, help=help_)
        sp.add_argument("--dir", help=dir_help)
        if name != "clear":
            sp.add_argument("--json", action="store_true", help="machine-readable output")
        if name == "verify":
            sp.add_argument("--delete", action="store_true", help="remove the bad entries")
        sp.set_defaults(fn=fn)
    return p


def main(argv=None) -> int:
    p = parser()
    try:
        args = p.parse_args(argv)
    except SystemExit as e:  # argparse: 2 on usage errors, 0 for --help
        return int(e.code or 0)
    if not getattr(args, "fn", None):
        p.print_usage(sys.stderr)
        print("python3 -m torch_trn cache: a command is required", file=sys.stderr)
        return EXIT_USAGE
    try:
        return args.fn(args)
    except UsageError as e:
        print(f"python3 -m torch_trn cache {args.command}: {e}", file=sys.stderr)
        return EXIT_USAGE
