"""python3 -m torch_trn COMMAND ...

    cache ls|stats|clear|verify ...   the compiled-group disk cache (python3 -m torch_trn cache --help)
    timeline TRACE [-o PNG] [--json]  summarise / draw a profile (same as python3 -m torch_trn.timeline)
    audit [--target T] [--steps N] [--json OUT] [--strict] script.py [args]
                                      what of a script would fall back, not compile or recompile

Only `cache` starts the device (it asks the runtime for its cache directory and build): `python3
-m torch_trn` imports the package without starting it (torch_trn/_bootstrap.py).
"""
import sys

USAGE = __doc__.strip() + "\n"


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(USAGE, file=sys.stdout if argv else sys.stderr, end="")
        return 0 if argv else 2
    command, rest = argv[0], argv[1:]
    if command == "cache":
        from torch_trn import cache_cli
        return cache_cli.main(rest)
    if command == "audit":
        from torch_trn import audit
        return audit.main(rest)
    if command == "timeline":
        from torch_trn import timeline
        return timeline.main(rest)
    print(f"python3 -m torch_trn: unknown command {command!r}\n\n{USAGE}", file=sys.stderr, end="")
    return 2


if __name__ == "__main__":
    sys.exit(main())
