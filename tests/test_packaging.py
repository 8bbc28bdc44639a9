"""What a user gets from `pip install .`: the bundled fits inside the package, and a light
`import` for the GPU harness."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from seer import fitsfile

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ("pyproject.toml", "README.md", "seer", "cudnn_bench", "fits")


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The package built as a wheel from a copy of the source (the checkout stays clean) and
    installed, without dependencies, into a folder of its own."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    src.mkdir()
    for name in SHIPPED:
        p = ROOT / name
        (shutil.copytree(p, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
         if p.is_dir() else shutil.copy2(p, src / name))
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                        "--quiet", "-w", str(tmp / "dist"), str(src)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    wheel = next((tmp / "dist").glob("seer-*.whl"))
    target = tmp / "site"
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--quiet", "--target",
                        str(target), str(wheel)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return target


def run_outside(code: str, site: Path, cwd: Path) -> str:
    """Run `code` from a folder outside the repository with the installed copy first on the path."""
    prog = f"import sys; sys.path.insert(0, {str(site)!r})\n{code}"
    r = subprocess.run([sys.executable, "-c", prog], cwd=cwd, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_wheel_ships_the_fits(installed, tmp_path):
    out = run_outside(
        "import seer, math\n"
        "print(seer.__file__)\n"
        "print(','.join(seer.available()))\n"
        "t = seer.load('t4').predict(op='bmm', batch=8, m=512, n=512, k=512)\n"
        "assert math.isfinite(t) and t > 0, t\n"
        "print(seer.load('Tesla T4').path)\n", installed, tmp_path)
    file, names, fits_path = out.split("\n")[:3]
    assert file.startswith(str(installed))  # the installed copy, not the checkout
    assert names.split(",") == fitsfile.bundled() and len(names.split(",")) >= 5
    assert fits_path.startswith(str(installed / "seer" / "fits"))


def test_the_seer_command_is_installed(installed, tmp_path):
    """pyproject's [project.scripts] gives the wheel a `seer` console script that runs seer.command."""
    (entry_points,) = installed.glob("seer-*.dist-info/entry_points.txt")
    assert "[console_scripts]\nseer = seer.command:main" in entry_points.read_text()
    script = installed / "bin" / "seer"
    env = {**os.environ, "PYTHONPATH": str(installed)}
    r = subprocess.run([sys.executable, str(script), "--help"], cwd=tmp_path, capture_output=True, text=True, env=env)
    assert r.returncode == 0 and "subcommands:" in r.stdout and "predict" in r.stdout, r.stderr


def test_default_fit_output_of_an_installed_seer_is_not_the_package(installed, tmp_path):
    out = run_outside("from seer import fitsfile; print(fitsfile.DEFAULT_OUT)", installed, tmp_path)
    assert out.strip() == "fits"  # ./fits, never inside site-packages


def test_harness_imports_light():
    """The harness's record store and `import seer` load neither statsmodels nor scipy (PEP 562
    lazy attributes): a GPU host starts collecting at once; prediction never loads statsmodels."""
    code = ("import sys, seer, cudnn_bench.store, cudnn_bench.plan\n"
            "heavy = [m for m in ('statsmodels', 'scipy', 'seer.predict', 'seer.models') if m in sys.modules]\n"
            "assert not heavy, heavy\n"
            "assert callable(seer.load) and 'statsmodels' not in sys.modules\n"
            "seer.load('t4').predict(op='bmm', batch=8, m=64, n=64, k=64)\n"
            "assert 'scipy' in sys.modules  # loaded on first use\n"
            "assert 'statsmodels' not in sys.modules  # fitting needs it, predicting does not\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
