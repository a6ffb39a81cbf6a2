"""Write a pip constraints file pinning every dependency declared in pyproject.toml to its floor.

``python .ci/floors.py [EXTRA ...] > constraints.txt`` pins the core dependencies and those of the
named extras (``name>=X`` becomes ``name==X``; extras in brackets are dropped from the name).
``.ci/run`` installs the package with these constraints in a second virtual environment and runs
the fast tests there, so a floor that the code does not really support fails CI.
"""

import re
import sys
import tomllib
from pathlib import Path

project = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())["project"]
reqs = list(project["dependencies"])
for extra in sys.argv[1:]:
    reqs += project["optional-dependencies"][extra]
pins = {}
for req in reqs:
    m = re.fullmatch(r"\s*([A-Za-z0-9_.-]+)(\[[^\]]*\])?\s*>=\s*([0-9][0-9A-Za-z.]*)\s*(,.*)?", req)
    if m is None:
        sys.exit(f"floors.py: no '>=' floor in requirement {req!r}; every dependency needs one")
    name = m.group(1).lower().replace("_", "-")
    pins[name] = max(pins.get(name, m.group(3)), m.group(3), key=lambda v: [int(x) for x in re.findall(r"\d+", v)])
print("\n".join(f"{name}=={version}" for name, version in sorted(pins.items())))
