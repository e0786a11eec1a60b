"""Schedulers as plug-ins: one module per scheduler behind fleet/schedulers/base.py's Protocol, one
registry (ALL_SCHEDULERS); `fleet ... --scheduler NAME` reads its choices from it, the old
`--slurm/--k8s` spellings are hidden aliases, no fleet command tells one scheduler from another,
and docs/architecture.md's "How to add a scheduler" stays in step with the code."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from fake_slurm import cluster

from envbuilder.certify.scheduler import JOB_VARIABLES, scheduler_record
from envbuilder.cli import cli
from envbuilder.fleet.jobs import FleetRun
from envbuilder.fleet.schedulers import ALL_SCHEDULERS, choices, scheduler_named, scheduler_of_run
from envbuilder.fleet.schedulers.base import Scheduler

ROOT = Path(__file__).resolve().parents[2]
NODES = ROOT / "tests" / "data" / "k8s" / "nodes.json"
COMMANDS = ("plan", "certify", "build")  # the fleet commands that take a scheduler


def _slurm(monkeypatch: pytest.MonkeyPatch) -> None:
    """The registry's Slurm answers from the recorded test cluster (tests/data/slurm)."""
    monkeypatch.setattr(scheduler_named("slurm"), "runner", cluster())


def _command(name: str) -> click.Command:
    group = cli.get_command(click.Context(cli), "fleet")  # the lazy table imports it
    assert isinstance(group, click.Group)
    cmd = group.get_command(click.Context(group), name)
    assert cmd is not None
    return cmd


def test_the_registry_holds_one_module_per_scheduler() -> None:
    names = [s.name for s in ALL_SCHEDULERS]
    assert names == ["slurm", "kubernetes"] and choices() == ("slurm", "k8s")
    modules = [type(s).__module__ for s in ALL_SCHEDULERS]
    assert modules == [f"envbuilder.fleet.schedulers.{n}" for n in names]  # one module each
    assert len(set(choices())) == len(ALL_SCHEDULERS)
    for s in ALL_SCHEDULERS:
        assert scheduler_named(s.option) is s and scheduler_named(s.name) is s


def test_each_command_reads_its_scheduler_choices_from_the_registry() -> None:
    for name in COMMANDS:
        params = {p.name: p for p in _command(name).params}
        option = params["scheduler_name"]
        assert isinstance(option.type, click.Choice) and tuple(option.type.choices) == choices()
        for s in ALL_SCHEDULERS:  # the spelling before --scheduler: kept, hidden
            alias = params[f"scheduler_alias_{s.option}"]
            assert isinstance(alias, click.Option) and alias.hidden and alias.opts == [f"--{s.option}"]


def test_the_old_flags_give_exactly_what_scheduler_gives(monkeypatch: pytest.MonkeyPatch) -> None:
    _slurm(monkeypatch)
    run = CliRunner()
    pairs = (
        (["--slurm"], ["--scheduler", "slurm"]),
        (["--k8s", "--nodes", str(NODES)], ["--scheduler", "k8s", "--nodes", str(NODES)]),
    )
    for old, new in pairs:
        a = run.invoke(cli, ["fleet", "plan", *old, "--json"])
        b = run.invoke(cli, ["fleet", "plan", *new, "--json"])
        assert a.exit_code == 0 and b.exit_code == 0, (a.output, b.output)
        assert a.stdout == b.stdout
    slurm = json.loads(run.invoke(cli, ["fleet", "plan", "--scheduler", "slurm", "--json"]).stdout)
    k8s = json.loads(
        run.invoke(cli, ["fleet", "plan", "--scheduler", "k8s", "--nodes", str(NODES), "--json"]).stdout
    )
    assert slurm["scheduler"] == "slurm" and [c["name"] for c in slurm["classes"]] == ["a100", "cpu", "h200"]
    assert k8s["scheduler"] == "kubernetes" and all(c["scheduler"] == "kubernetes" for c in k8s["classes"])
    text = run.invoke(cli, ["fleet", "plan", "--scheduler", "slurm"]).stdout
    assert text.startswith("3 node class(es) (Slurm scontrol)")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "say which scheduler: --scheduler slurm|k8s"),
        (["--slurm", "--k8s"], "say one scheduler, not slurm and k8s"),
        (["--scheduler", "k8s", "--slurm"], "say one scheduler, not k8s and slurm"),
        (["--scheduler", "ray"], "Invalid value for '--scheduler': 'ray' is not one of 'slurm', 'k8s'"),
    ],
)
def test_a_command_without_one_scheduler_is_refused(args: list[str], message: str) -> None:
    for name in ("plan", "certify"):
        extra = ["img:1"] if name == "certify" else []
        res = CliRunner().invoke(cli, ["fleet", name, *extra, *args])
        assert res.exit_code == 2 and message in res.output, res.output
        assert "Traceback" not in res.output


def test_the_same_scheduler_twice_is_one(monkeypatch: pytest.MonkeyPatch) -> None:
    _slurm(monkeypatch)
    res = CliRunner().invoke(cli, ["fleet", "plan", "--slurm", "--scheduler", "slurm", "--json"])
    assert res.exit_code == 0 and json.loads(res.stdout)["scheduler"] == "slurm", res.output


def test_a_recorded_run_goes_back_to_the_scheduler_that_ran_it() -> None:
    def run_of(name: str) -> FleetRun:
        return FleetRun.from_dict(
            {"run_id": "r", "created": "c", "scheduler": name, "image": {"id": "sha256:0", "ref": "x"}}
        )

    for s in ALL_SCHEDULERS:
        assert scheduler_of_run(run_of(s.name)) is s
    assert scheduler_of_run(run_of("ray")) is None


def test_certifys_job_variables_are_those_of_registered_schedulers() -> None:
    """certify/scheduler.py comes before fleet/ and cannot read the registry: its table of the
    variables each scheduler's job carries names only registered schedulers."""
    names = {s.name for s in ALL_SCHEDULERS}
    assert {j.kind for j in JOB_VARIABLES} <= names
    env = {"SLURM_JOB_ID": "7", "SLURMD_NODENAME": "h200-0", "ENVBUILDER_NODE_CLASS": "h200"}
    env |= {"ENVBUILDER_SLURM_GRES": "gpu:h200:2"}
    assert scheduler_record(env) == {
        "kind": "slurm",
        "job_id": "7",
        "node": "h200-0",
        "class": "h200",
        "gres": "gpu:h200:2",
    }
    assert scheduler_record({"ENVBUILDER_K8S_POD": "p", "ENVBUILDER_FLEET_RUN": "r"}) == {
        "kind": "kubernetes",
        "pod": "p",
        "fleet_run": "r",
    }
    assert scheduler_record({"PATH": "/bin"}) is None


# --------------------------------------------------------------------------- nothing else knows them


def _scheduler_modules() -> set[Path]:
    return {ROOT / (type(s).__module__.replace(".", "/") + ".py") for s in ALL_SCHEDULERS}


def _words() -> set[str]:
    return {w for s in ALL_SCHEDULERS for w in (s.name, s.option)}


def _knows_a_scheduler(path: Path) -> list[str]:
    """Where a module compares a value with a scheduler's name, or (the CLI) names one in an
    identifier or imports a scheduler's own module."""
    words = _words()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            consts = [c.value for c in ast.walk(node) if isinstance(c, ast.Constant)]
            found += [f"{path.name}:{node.lineno} compares with {c!r}" for c in consts if c in words]
        if path.parent.name == "cli":
            names = []
            if isinstance(node, ast.Name):
                names = [node.id]
            elif isinstance(node, ast.arg):
                names = [node.arg]
            elif isinstance(node, ast.FunctionDef):
                names = [node.name]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module.split(".")[-1], *(a.name for a in node.names)]
            line = getattr(node, "lineno", 0)
            found += [
                f"{path.name}:{line} names {n}"
                for n in names
                if any(re.search(rf"(^|_){re.escape(w)}(_|$)", n) for w in words)
            ]
    return found


def test_no_fleet_command_or_module_tells_one_scheduler_from_another() -> None:
    """No `if slurm / elif k8s` outside the scheduler modules: the fleet commands and the fleet
    modules every scheduler shares ask the scheduler they were given."""
    mine = _scheduler_modules()
    paths = sorted((ROOT / "envbuilder" / "cli").glob("fleet_*.py"))
    paths += [p for p in sorted((ROOT / "envbuilder" / "fleet").rglob("*.py")) if p not in mine]
    bad = [line for p in paths for line in _knows_a_scheduler(p)]
    assert not bad, "\n".join(bad)


def test_the_check_sees_the_old_chains(tmp_path: Path) -> None:
    """The check fails on what the commands held before (cli/fleet_plan_cmd.py, fleet/certify.py)."""
    cli_dir = tmp_path / "cli"
    cli_dir.mkdir()
    old_cli = cli_dir / "fleet_plan_cmd.py"
    old_cli.write_text(
        textwrap.dedent(
            """
            from envbuilder.fleet.kubernetes import yaml_text
            def plan(use_slurm, use_k8s):
                return "kubernetes" if use_k8s else "slurm"
            """
        )
    )
    old_fleet = tmp_path / "certify.py"
    old_fleet.write_text('def advance_recorded(run):\n    if run.scheduler == "kubernetes":\n        pass\n')
    assert len(_knows_a_scheduler(old_cli)) >= 3
    assert _knows_a_scheduler(old_fleet) == ["certify.py:2 compares with 'kubernetes'"]


def test_a_scheduler_is_one_module_and_one_registry_line(tmp_path: Path) -> None:
    """A scheduler the CLI has never heard of, added to the registry only: `--scheduler` offers it,
    `fleet plan` lists its classes, `fleet constraints --format` takes its section."""
    script = tmp_path / "probe.py"
    script.write_text(
        textwrap.dedent(
            """
            import json, sys
            import envbuilder.fleet.schedulers as registry
            from envbuilder.fleet.classes import NodeClass
            from envbuilder.fleet.schedulers.base import ConstraintSection

            class Ray:
                name = "ray"
                option = "ray"
                source = "Ray's node resources"
                constraint_formats = ("ray",)

                def node_classes(self, matrix, query):
                    return (NodeClass(name="h100x8", scheduler="ray", nodes=("n1",), gpus_per_node=8),)

                def certify(self, request, *, say, echo):
                    return None, []

                def advance(self, run, *, store, say):
                    return run, []

                def constraints(self, rows, *, image):
                    return (ConstraintSection(format="ray", key="ray", value={}, lines=("# ray",)),)

            registry.ALL_SCHEDULERS = (*registry.ALL_SCHEDULERS, Ray())
            from envbuilder.cli import cli
            from envbuilder.cli.fleet_constraints_cmd import FORMATS
            print(json.dumps({"formats": FORMATS}))
            cli.main(args=["fleet", "plan", "--scheduler", "ray", "--json"])
            """
        )
    )
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, check=False, cwd=ROOT, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    first, rest = proc.stdout.split("\n", 1)
    assert json.loads(first)["formats"] == ["all", "slurm", "k8s", "nfd", "ray"]
    doc = json.loads(rest)
    assert doc["scheduler"] == "ray" and [c["name"] for c in doc["classes"]] == ["h100x8"]


# --------------------------------------------------------------------------- the doc


def _doc_section() -> str:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    m = re.search(r"^## How to add a scheduler\n(.*?)(?=^## )", text, re.S | re.M)
    assert m, "docs/architecture.md has no section 'How to add a scheduler'"
    return m.group(1)


def test_how_to_add_a_scheduler_is_in_step_with_the_registry() -> None:
    """The doc's steps name files that exist (the worked example's module excepted: it is not
    written), at most 3 beyond tests; every member of the Protocol; the registry by name; and the
    schedulers registered today."""
    section = _doc_section()
    example = re.search(r"Worked example: (\w+)", section)
    assert example, "the section names its worked example"
    new = example.group(1).lower()
    assert new not in {s.name for s in ALL_SCHEDULERS}, "the worked example is not implemented"
    steps = re.findall(r"^\d+\. .*?(?=^\d+\. |\n\n|\Z)", section, re.S | re.M)
    files = {f for step in steps for f in re.findall(r"`((?:envbuilder|docs)/[\w/.]+\.(?:py|md))`", step)}
    code = {f for f in files if f.startswith("envbuilder/")}
    assert 2 <= len(code) <= 3, code
    for f in sorted(files):
        assert (ROOT / f).is_file() or Path(f).stem == new, f"{f} (named in the doc) does not exist"
    assert f"envbuilder/fleet/schedulers/{new}.py" in code
    members = [n for n in vars(Scheduler) if not n.startswith("_") and n not in ("register",)]
    assert {"name", "option", "node_classes", "certify", "advance", "constraints"} <= set(members)
    missing = [m for m in members if f"`{m}`" not in section]
    assert not missing, f"the doc does not name the Protocol's {missing}"
    for word in ("ALL_SCHEDULERS", "JOB_VARIABLES"):
        assert f"`{word}`" in section
    today = re.search(r"Registered today: (.*)", section)
    assert today, "the section says which schedulers are registered"
    assert re.findall(r"`(\w+)`", today.group(1)) == [s.option for s in ALL_SCHEDULERS]


def test_constraints_print_each_schedulers_sections_in_registry_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`fleet constraints` asks every registered scheduler: the sections, their JSON keys and the
    --format choices are theirs (Slurm's sbatch options, Kubernetes' affinity, the NFD spec)."""
    from test_fleet_k8s import gpu_cert
    from test_fleet_slurm import fleet_image

    import envbuilder.cli.fleet_constraints_cmd as cmd
    from envbuilder.fleet.schedulers.kubernetes import NFD_ARTIFACT_TYPE
    from envbuilder.host import GpuInfo

    h200 = GpuInfo(index=0, name="NVIDIA H200", uuid="GPU-1", cc="9.0", brand="nvidia")
    certs = [gpu_cert((h200,), "11", "h200", "2026-12-01T10:00:00Z")]
    monkeypatch.setattr(cmd, "find_image", lambda ref: fleet_image())
    monkeypatch.setattr(cmd, "image_certificates", lambda *a: (certs, [], []))
    run = CliRunner()
    doc = json.loads(run.invoke(cli, ["fleet", "constraints", "team/train:1", "--json"]).stdout)
    assert list(doc) == ["image", "slurm", "kubernetes", "nfd"]
    assert doc["slurm"][0]["sbatch"] == "--partition=gpu --gres=gpu:h200:8 --constraint=sm_90"
    assert doc["kubernetes"]["affinity"]["nodeAffinity"] and doc["nfd"]["version"] == "v1alpha1"
    text = run.invoke(cli, ["fleet", "constraints", "team/train:1"]).stdout
    heads = [line for line in text.splitlines() if line.startswith("# ")]
    assert heads == [
        "# Slurm: the options each certified node class was selected by",
        "# Kubernetes: pod spec affinity (GPU Feature Discovery labels)",
        "# Kubernetes: pod spec initContainers (envbuilder check's in-image steps, docs/check.md)",
        f"# NFD image compatibility ({NFD_ARTIFACT_TYPE})",
    ]
    assert "h200: sbatch --partition=gpu --gres=gpu:h200:8 --constraint=sm_90  # certified" in text
    only = run.invoke(cli, ["fleet", "constraints", "team/train:1", "--format", "nfd"]).stdout
    assert only.startswith(f"# NFD image compatibility ({NFD_ARTIFACT_TYPE})") and "sbatch" not in only
    assert "envbuilder: team/train:1 (torch-2.11.0-cu130-py3.12-bundled) certified" in only
