"""Helpers shared by the Python tests."""
import os
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def line_of(path, marker):
    """The line number of the line in `path` carrying `marker` (a `# MARK-...` comment)."""
    with open(path) as f:
        for i, text in enumerate(f, 1):
            if marker in text and "line_of(" not in text:
                return i
    raise AssertionError(f"{marker} not found in {path}")


def run_python(code, env=None, drop=()):
    """Runs `code` in a fresh python3 with torch_trn importable; returns the CompletedProcess."""
    full_env = {k: v for k, v in os.environ.items() if k not in drop}
    full_env.update(env or {})
    full_env["PYTHONPATH"] = os.path.join(ROOT, "python")
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=full_env,
                          capture_output=True, text=True, timeout=300)
