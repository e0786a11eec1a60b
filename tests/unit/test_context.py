"""What a project's build context holds (engine/context.py, image/render.py): what `docker build`
would send, less envbuilder's own outputs (issue 26 item 1: a lock rewritten by every build, a
wheelhouse, report pages and `up`'s build/NAME/ in the project changed the image ID on every
rebuild), and only the locked wheels of a shared wheelhouse (item 2)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from render_cases import TORCH_BUNDLED_CU130, locked, package_lock, spec

from envbuilder.engine.context import included_paths
from envbuilder.errors import UsageError
from envbuilder.image.render import RenderOptions, write_build_context


def make_project(root: Path) -> Path:
    """docs/project.md's layout after `lock`, `wheelhouse`, `report` and `up` ran in it."""
    files = {
        "train.yaml": "name: demo\n",
        "requirements.txt": "six\n",
        "src/train.py": "print(1)\n",
        "train.lock.json": "{}",
        "wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl": "w",
        "wheels/six-1.16.0-py2.py3-none-any.whl": "w",
        "envbuilder-report-0123456789ab.html": "<html>",
        "build/demo/lock.json": "{}",
        "build/demo/certificate.json": "{}",
        "build/demo/report.html": "<html>",
        "notes.secret": "s",
        "logs/run.log": "l",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / "data").mkdir()  # the user's own empty folder: docker sends it, so do we
    (root / ".dockerignore").write_text("notes.secret\nlogs/*.log\n")
    return root


def test_envbuilder_outputs_never_enter_the_context_and_the_dockerignore_applies(tmp_path: Path) -> None:
    root = make_project(tmp_path / "proj")
    assert included_paths(root) == [
        ".dockerignore", "data", "logs", "requirements.txt", "src", "src/train.py", "train.yaml",
    ]  # fmt: skip
    # `logs` stays, emptied by the user's own pattern: what `docker build` would send


def test_the_users_dockerignore_can_take_an_output_back(tmp_path: Path) -> None:
    root = make_project(tmp_path / "proj")
    (root / ".dockerignore").write_text("!train.lock.json\n")
    assert "train.lock.json" in included_paths(root)


def test_the_builds_own_paths_are_left_out_whatever_their_names(tmp_path: Path) -> None:
    root = make_project(tmp_path / "proj")
    (root / "pins.json").write_text("{}")  # build --lock-out pins.json
    (root / "vendor").mkdir()
    (root / "vendor" / "index.html").write_text("x")  # a find-links folder holding more than wheels
    outside = tmp_path / "elsewhere.json"
    kept = included_paths(root, [root / "pins.json", root / "vendor", outside, root])
    assert "pins.json" not in kept and "vendor" not in kept and "vendor/index.html" not in kept
    assert "src/train.py" in kept  # the project folder itself is never named away


def test_three_renders_of_a_project_with_outputs_between_them_copy_the_same_files(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / "src" / "train.py").write_text("print(1)\n")
    s = replace(spec(context=".", installer="pip"), base_dir=str(root))
    out = tmp_path / "out"

    def copied() -> list[str]:
        ctx = write_build_context(s, TORCH_BUNDLED_CU130, out).context_dir / "project"
        return sorted(str(p.relative_to(ctx)) for p in ctx.rglob("*"))

    first = copied()
    make_project(root)  # lock, wheelhouse, report and up ran in the folder
    (root / ".dockerignore").unlink()
    second = copied()
    (root / "train.lock.json").write_text('{"build": {"image_id": "sha256:..."}}')  # the build wrote it
    assert copied() == second
    assert set(second) - set(first) == {"data", "logs", "logs/run.log", "notes.secret", "requirements.txt",
                                        "train.yaml"}  # fmt: skip


def wheelhouse_with_extras(folder: Path) -> Path:
    folder.mkdir()
    for name in ("torch-2.11.0-py3-none-any.whl", "filelock-4.3.1-py3-none-any.whl",
                 "numpy-2.1.0-py3-none-any.whl", "other_project-9.9-py3-none-any.whl",
                 "torch-2.99.0-py3-none-any.whl"):  # fmt: skip
        (folder / name).write_bytes(b"wheel")
    return folder


def test_a_shared_wheelhouse_links_only_the_locked_wheels(tmp_path: Path) -> None:
    wheels = wheelhouse_with_extras(tmp_path / "wheelhouse")
    options = RenderOptions(wheelhouse=wheels, package_locks=(package_lock(),))
    ctx = write_build_context(spec(), TORCH_BUNDLED_CU130, tmp_path / "out", options).context_dir
    assert sorted(p.name for p in (ctx / "wheelhouse").iterdir()) == [
        "filelock-4.3.1-py3-none-any.whl", "numpy-2.1.0-py3-none-any.whl", "torch-2.11.0-py3-none-any.whl",
    ]  # fmt: skip


def test_a_wheelhouse_missing_a_locked_wheel_is_refused_before_docker(tmp_path: Path) -> None:
    wheels = wheelhouse_with_extras(tmp_path / "wheelhouse")
    lock = package_lock(project=(locked("six", "1.16.0", "project", "c"),))
    with pytest.raises(UsageError, match=r"lacks 1 locked wheel\(s\): six-1.16.0-py3-none-any.whl") as err:
        write_build_context(
            spec(),
            TORCH_BUNDLED_CU130,
            tmp_path / "out",
            RenderOptions(wheelhouse=wheels, package_locks=(lock,)),
        )
    assert err.value.hint == f"fill it from the lock: envbuilder wheelhouse LOCK {wheels}"
    assert not (tmp_path / "out").exists()
