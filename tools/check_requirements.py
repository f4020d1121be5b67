"""Exit 0 when every pinned requirement (name==version) is installed at that version."""
import importlib.metadata as md
import sys


def main(path: str) -> int:
    missing = []
    for line in open(path):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name, _, version = line.partition("==")
        try:
            have = md.version(name)
        except md.PackageNotFoundError:
            have = None
        if have is None or (version and have.split("+")[0] != version):
            missing.append(f"{line} (have {have})")
    if missing:
        print("missing or different:", ", ".join(missing), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
