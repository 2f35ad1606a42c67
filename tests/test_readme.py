"""CI runs exactly the README's set-up commands."""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_ci_runs_the_readme_commands():
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```bash\n(.*?)```", readme, flags=re.S)
    readme_commands = [line.strip() for b in blocks for line in b.splitlines() if line.strip()]
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    ci_commands = [line.strip() for line in ci
                   if line.strip() and not line.lstrip().startswith(("#", "set ", "cd "))]
    assert len(readme_commands) == 3
    assert ci_commands == readme_commands


def test_readme_python_examples_run():
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", readme, flags=re.S)
    assert blocks
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {})


def test_the_test_requirements_file_is_the_test_extra():
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]["test"]
    lines = (ROOT / "tests" / "requirements.txt").read_text().splitlines()
    listed = [line.strip() for line in lines if line.strip() and not line.startswith("#")]
    assert listed == extra


def test_the_license_file_is_the_declared_license():
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["license"]
    text = (ROOT / "LICENSE").read_text()
    assert declared == {"text": "BSD-3-Clause"}
    assert text.startswith("BSD 3-Clause License")
    assert "Neither the name of the copyright holder" in text  # the third clause
