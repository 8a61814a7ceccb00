"""The command line starts without the heavy libraries: `contend --help` and every command's parser, and
a small `contend sim`, load none of pandas, pyarrow, matplotlib or scikit-learn (they cost most of a
second); the modules that need them import them where they are used."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HEAVY = ("pandas", "pyarrow", "matplotlib", "sklearn")

PROBE = """
import json, sys
from contend.cli import build_parser, main
{action}
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in {heavy!r})), file=sys.stderr)
"""


def loaded(action: str, heavy: tuple[str, ...] = HEAVY) -> list[str]:
    done = subprocess.run([sys.executable, "-c", PROBE.format(action=action, heavy=heavy)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stderr.strip().splitlines()[-1])


def test_the_parser_of_every_command_loads_no_heavy_library():
    assert loaded("build_parser()") == []


def test_the_parser_of_every_command_loads_no_numpy():
    # numpy alone is half of `contend --help`'s start-up; only running a command needs it
    assert loaded("build_parser()", ("numpy",)) == []


def test_a_goal_simulation_loads_no_heavy_library():
    goal = Path(__file__).parent / "data" / "schedgen-anytag.goal"
    assert loaded(f"assert main(['sim', {str(goal)!r}, '--json']) == 0") == []


def test_the_probe_sees_a_heavy_library_when_one_is_loaded():
    assert "pandas" in loaded("import contend.noise.trace")
